"""Parse a krammar definitions file into its syntax tree, strictly.

Every rule the grammar states is an error with a line and column: tabs, trailing spaces, one
blank line between definitions, two spaces of nesting per struct level, one space between
words, comments directly above what they describe, a response right after its request, types
defined before use, no struct that contains itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NoReturn

from .fields import parse_field
from .headers import parse_header
from .syntax import Definition, Document, FieldSpec, KrammarError
from .words import ALL, INTEGERS, PRIMITIVES

MAX_DEPTH = 32  # nesting levels of anonymous structs; Kafka's deepest is 4


def parse_krammar(text: str, source: str = "<krammar>") -> Document:
    return _Parser(text, source).document()


class _Parser:
    def __init__(self, text: str, source: str):
        self.source = source
        self.lines = text.split("\n")
        if self.lines[-1] == "":
            self.lines.pop()  # the file's final newline
        for number, line in enumerate(self.lines, 1):
            self._check_characters(line, number)
        self.i = 0
        self.defined: dict[str, list[Definition]] = {}
        self.current: Definition | None = None

    def fail(self, message: str, line: int, column: int = 1) -> NoReturn:
        raise KrammarError(message, line, column, self.source)

    def _check_characters(self, line: str, number: int) -> None:
        for char, why in (
            ("\t", "tabs are not allowed: indent with spaces"),
            ("\r", "carriage return: lines end with \\n only"),
        ):
            if char in line:
                self.fail(why, number, line.index(char) + 1)
        if line.endswith(" "):
            self.fail("lines cannot have trailing spaces", number, len(line.rstrip(" ")) + 1)

    # -- top level ---------------------------------------------------------------------------

    def document(self) -> Document:
        file_comment = self._comments(0)
        if file_comment and (self.i == len(self.lines) or self.lines[self.i] == ""):
            self.i += 1  # a comment block standing alone at the top describes the file
        else:
            self.i, file_comment = 0, ()
        definitions: list[Definition] = []
        while self.i < len(self.lines):
            definition = self._definition(definitions)
            definitions.append(definition)
            if self.i < len(self.lines):
                line = self.lines[self.i]
                if line.startswith("//"):
                    self.fail("this comment must be indented like the field it describes", self.i + 1)
                if line != "":
                    self.fail("definitions are separated by one blank line", self.i + 1)
                self.i += 1
                if self.i == len(self.lines):
                    self.fail("blank line at the end of the file", self.i)
                if self.lines[self.i] == "":
                    self.fail("only one blank line may separate definitions", self.i + 1)
        if definitions and definitions[-1].role == "request":
            last = definitions[-1]
            self.fail(f"{last.name} must be followed by {_response_name(last.name)}, but the file ends", last.at.line)
        return Document(tuple(definitions), file_comment, self.source)

    def _definition(self, before: list[Definition]) -> Definition:
        comment = self._comments(0)
        if self.i == len(self.lines) or self.lines[self.i] == "":
            if comment:  # self.i is then the 1-based number of the comment's last line
                self.fail("a comment must sit directly above the definition it describes", self.i)
            self.fail("blank line where a definition should start", self.i + 1)
        number, line = self.i + 1, self.lines[self.i]
        if line.startswith(" "):
            if before and not comment and self.lines[self.i - 1] == "":
                self.fail("a blank line ends a definition: the indented lines after it belong to none", number - 1)
            self.fail("indented line where a definition should start", number)
        self._check_spacing(line, number, 0)
        definition = parse_header(line, number, comment, self.source)
        self._check_position(definition, before)
        self.i += 1
        self.current = definition
        definition = replace(definition, fields=self._fields(1))
        self._check_definition(definition)
        self.defined.setdefault(definition.name, []).append(definition)
        return definition

    def _comments(self, indent: int) -> tuple[str, ...]:
        comment = []
        while (
            self.i < len(self.lines)
            and self.lines[self.i][indent:].startswith("//")
            and _indent(self.lines[self.i]) == indent
        ):
            comment.append(self.lines[self.i][indent:])
            self.i += 1
        return tuple(comment)

    def _check_position(self, definition: Definition, before: list[Definition]) -> None:
        previous = before[-1] if before else None
        at = definition.at.line
        if definition.role == "response":
            request = definition.name[: -len("Response")] + "Request"
            if previous is not None and previous.name == request and previous.role != "request":
                self.fail(
                    f"{definition.name} follows {request}, which has no 'key N, max version M' and so is not a request",
                    at,
                )
            if previous is None or previous.role != "request" or previous.name != request:
                self.fail(f"{definition.name} must directly follow {request}", at)
        elif previous is not None and previous.role == "request":
            self.fail(f"{previous.name} must be followed directly by {_response_name(previous.name)}", at)
        for other in self.defined.get(definition.name, ()):
            shared = definition.role == other.role == "struct" and definition.owners and other.owners
            if not shared or set(definition.owners) & set(other.owners):
                self.fail(f"{definition.name} is already defined on line {other.at.line}", at)

    def _check_definition(self, definition: Definition) -> None:
        if definition.with_version_field:
            first = definition.fields[0] if definition.fields else None
            if first is None or first.name != "Version" or first.type.base != "int16" or first.type.array:
                self.fail(
                    f"{definition.name} is 'with version field': its first field must be 'Version: int16'",
                    first.at.line if first else definition.at.line,
                    first.at.column if first else 1,
                )

    # -- fields ------------------------------------------------------------------------------

    def _fields(self, depth: int) -> tuple[FieldSpec, ...]:
        indent = 2 * depth
        fields: list[FieldSpec] = []
        names: dict[str, FieldSpec] = {}
        while self.i < len(self.lines):
            number, line = self.i + 1, self.lines[self.i]
            if line == "":
                break
            spaces = _indent(line)
            if spaces % 2:
                self.fail(f"indented {spaces} spaces: fields nest two spaces per struct level", number, spaces + 1)
            if spaces < indent:
                break
            if spaces > indent:
                self.fail(
                    f"indented {spaces} spaces where {indent} are expected (two more than the struct "
                    "only under a '=>' field)",
                    number,
                    indent + 1,
                )
            comment = self._comments(indent)
            if comment:
                if self.i == len(self.lines) or _indent(self.lines[self.i]) != indent or self.lines[self.i] == "":
                    self.fail("a comment must sit directly above the field it describes", self.i, indent + 1)
                number, line = self.i + 1, self.lines[self.i]
            self._check_spacing(line, number, indent)
            field = parse_field(line[indent:], number, indent, comment, self.source)
            self.i += 1
            self._check_type(field, names)
            if field.type.anonymous:
                if depth == MAX_DEPTH:
                    self.fail(f"structs nest at most {MAX_DEPTH} levels deep", number, field.type.at.column)
                nested = self._fields(depth + 1)
                if not nested:
                    self.fail(
                        f"{field.name} opens a struct ('=>') but no fields follow, indented {indent + 2} spaces",
                        number,
                        field.type.at.column,
                    )
                field = replace(field, type=replace(field.type, fields=nested))
            if field.name in names:
                self.fail(
                    f"field {field.name} is already defined on line {names[field.name].at.line}", number, indent + 1
                )
            names[field.name] = field
            fields.append(field)
        return tuple(fields)

    def _check_spacing(self, line: str, number: int, indent: int) -> None:
        code = line.split(" // ", 1)[0] if not line[indent:].startswith("//") else ""
        double = code.find("  ", indent)
        if double >= 0:
            self.fail("only one space may separate words", number, double + 2)

    def _check_type(self, field: FieldSpec, earlier: dict[str, FieldSpec]) -> None:
        spec = field.type
        at = spec.at
        if spec.base == "length-field-minus":
            source = earlier.get(spec.length_field)
            if source is None or source.type.base not in INTEGERS or source.type.array:
                self.fail(
                    f"length-field-minus reads its length from {spec.length_field!r}, which must be an "
                    "earlier integer field of this struct",
                    at.line,
                    at.column,
                )
            need, have = field.versions or ALL, source.versions or ALL
            if not (have.low <= need.low and need.high <= have.high):
                self.fail(
                    f"{spec.length_field} exists in versions {have} only, but {field.name} needs its length in {need}",
                    at.line,
                    at.column,
                )
            return
        if spec.anonymous or spec.base in PRIMITIVES:
            return
        if self.current is not None and spec.base == self.current.name:
            self.fail(f"circular struct: {spec.base} contains itself", at.line, at.column)
        known = self.defined.get(spec.base)
        if not known:
            self.fail(
                f"unknown type {spec.base!r} (named structs must be defined before they are used)", at.line, at.column
            )
        if known[-1].role != "struct" or known[-1].message_kind:
            self.fail(f"{spec.base} is a message, not a struct a field can hold", at.line, at.column)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _response_name(request: str) -> str:
    return request[: -len("Request")] + "Response"
