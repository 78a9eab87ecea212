"""One field line: ``Name: type(default) // v3+, tag 0``, read into a ``FieldSpec``.

The grammar's spacing rules (one space after the colon, one space between words, `` // ``
before the version comment) are checked here, each error pointing at its column.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import NoReturn

from .syntax import Fail, FieldSpec, KrammarError, Position, TypeSpec
from .words import ALWAYS_NULLABLE, NAME, NULLABLE_PRIMITIVES, PRIMITIVES, VERSIONS, parse_versions

_FIELD = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9]*): (?P<rest>\S.*)")
_DEFAULT = r"(?:\((?P<default>[^()]*)\))?"
_HINT = r"(?P<hint>[A-Za-z][A-Za-z0-9]*)?"
_ARRAY = re.compile(
    rf"(?:(?P<varint>varint)|(?P<nullable>nullable)(?:-(?P<nv>{VERSIONS}))?)?"
    rf"\[(?P<element>=>|[A-Za-z][A-Za-z0-9-]*)\]{_HINT}{_DEFAULT}"
)
_STRUCT = re.compile(rf"(?:(?P<nullable>nullable)(?:-(?P<nv>{VERSIONS}))?)?=>{_HINT}{_DEFAULT}")
_LENGTH = re.compile(r"length-field-minus => (?P<field>[A-Za-z][A-Za-z0-9]*) - (?P<minus>[0-9]+)")
_SCALAR = re.compile(rf"(?P<nullable>nullable-)?(?P<base>[A-Za-z][A-Za-z0-9-]*?)(?:-(?P<nv>{VERSIONS}))?{_DEFAULT}")
_TAG = re.compile(r"tag ([0-9]+)")


def parse_field(content: str, line: int, indent: int, comment: tuple[str, ...], source: str) -> FieldSpec:
    """``content`` is the line after its ``indent`` spaces; columns reported are 1-based."""

    def fail(message: str, offset: int) -> NoReturn:
        raise KrammarError(message, line, indent + offset + 1, source)

    double = content.find("  ")
    if double >= 0:
        fail("only one space may separate words", double + 1)
    match = _FIELD.fullmatch(content)
    if match is None:
        _explain_bad_field(content, fail)
    name, rest = match.group("name"), match.group("rest")
    type_offset = match.start("rest")
    attrs: dict = {}
    if "//" in rest:
        cut = rest.find(" // ")
        if cut < 0 or rest.find("//") != cut + 1:
            fail("a version comment is written ' // v1+' after the type", type_offset + rest.find("//"))
        attrs = _parse_attributes(rest[cut + 4 :], type_offset + cut + 4, fail)
        rest = rest[:cut]
    spec = parse_type(rest, Position(line, indent + type_offset + 1), fail, type_offset)
    return FieldSpec(name=name, type=spec, at=Position(line, indent + 1), comment=comment, **attrs)


def _explain_bad_field(content: str, fail: Fail) -> NoReturn:
    name = NAME.match(content)
    if name is None:
        fail(f"expected a field 'Name: type', found {content!r}", 0)
    after = content[name.end() :]
    if not after.startswith(":"):
        fail(f"field {name.group()} needs a colon after its name", name.end())
    if not after.startswith(": "):
        fail("one space must follow the colon", name.end() + 1)
    fail(f"field {name.group()} has no type", name.end() + 2)


def parse_type(text: str, at: Position, fail: Fail, offset: int) -> TypeSpec:
    """The type part of a field, ``offset`` being its position in the line (for errors)."""
    if text.startswith("length-field-minus"):
        match = _LENGTH.fullmatch(text)
        if match is None:
            fail("length-field-minus is written 'length-field-minus => Field - N'", offset)
        return TypeSpec(
            "length-field-minus", at, length_field=match.group("field"), length_minus=int(match.group("minus"))
        )
    match = _ARRAY.fullmatch(text)
    if match is not None:
        element = match.group("element")
        if match.group("hint") and element != "=>":
            fail("a name hint may only follow [=>]", offset + match.start("hint"))
        if element.startswith("nullable-") or element in ALWAYS_NULLABLE:
            fail(f"array elements cannot be nullable ({element})", offset + match.start("element"))
        array = "varint" if match.group("varint") else "nullable" if match.group("nullable") else "array"
        return TypeSpec(
            element,
            replace(at, column=at.column + match.start("element")),
            array=array,
            nullable=array == "nullable",
            nullable_versions=_nv(match),
            hint=match.group("hint") or "",
            default=match.group("default"),
        )
    match = _STRUCT.fullmatch(text)
    if match is not None:
        return TypeSpec(
            "=>",
            at,
            nullable=bool(match.group("nullable")),
            nullable_versions=_nv(match),
            hint=match.group("hint") or "",
            default=match.group("default"),
        )
    match = _SCALAR.fullmatch(text)
    if match is None:
        fail(f"cannot read type {text!r}", offset)
    base, nullable = match.group("base"), bool(match.group("nullable"))
    if match.group("nv") and not nullable:
        fail(f"a version range after a type ('-{match.group('nv')}') needs the nullable- prefix", offset)
    if nullable and base in PRIMITIVES and base not in NULLABLE_PRIMITIVES:
        why = "is always nullable" if base in ALWAYS_NULLABLE else "cannot be null"
        fail(f"{base} {why}; drop the nullable- prefix", offset)
    return TypeSpec(
        base,
        replace(at, column=at.column + match.start("base")),
        nullable=nullable,
        nullable_versions=_nv(match),
        default=match.group("default"),
    )


def _nv(match):
    text = match.group("nv")
    return parse_versions(text) if text else None


def _parse_attributes(text: str, offset: int, fail: Fail) -> dict:
    """``v3+, tag 0, map key, ...``: the version comment and the extensions after it."""
    attrs: dict = {}
    position = offset
    for i, item in enumerate(text.split(", ")):
        if not item:
            fail("empty item in the version comment", position)
        versions = parse_versions(item) if item != "none" else None
        if versions is not None:
            if i != 0:
                fail("the version range comes first in a version comment", position)
            attrs["versions"] = versions
        elif item[:1].isdigit() or (item.startswith("v") and item[1:2].isdigit()):
            fail(f"version comment {item!r} is not of the form v1+ or v8-v9 (low <= high <= 32767)", position)
        else:
            key, value = _attribute(item, position, fail)
            if key in attrs:
                fail(f"{item!r} repeats an earlier attribute", position)
            attrs[key] = value
        position += len(item) + 2
    if "tagged_versions" in attrs and "tag" not in attrs:
        fail("'tagged' needs a 'tag N'", offset)
    return attrs


def _attribute(item: str, position: int, fail: Fail):
    tag = _TAG.fullmatch(item)
    if tag is not None:
        if int(tag.group(1)) > 0x7FFFFFFF:
            fail(f"{item!r}: a tag is an unsigned 31-bit number", position)
        return "tag", int(tag.group(1))
    word, _, value = item.partition(" ")
    if item in ("map key", "ignorable", "zero copy"):
        return item.replace(" ", "_"), True
    if word == "entity" and NAME.fullmatch(value):
        return "entity_type", value
    if word in ("tagged", "flexible"):
        versions = parse_versions(value)
        if versions is None:
            fail(f"{word} takes a version range like v3+ or none, not {value!r}", position + len(word) + 1)
        return f"{word}_versions", versions
    fail(
        f"unknown attribute {item!r} (expected a version range, tag N, tagged vN+, flexible vN+|none, "
        "map key, entity Name, ignorable or zero copy)",
        position,
    )
