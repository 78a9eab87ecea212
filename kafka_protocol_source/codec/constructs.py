"""construct classes for Kafka's wire types, each able to parse and to emit compiled code.

construct's compiled mode only speeds up constructs that emit code; a construct without
``_emitparse`` falls back to a slow linked call. So every Kafka type here emits, and the emitted
code calls the same ``runtime`` readers that ``_parse`` calls: compiled and interpreted parsing
differ only in the glue, never in how bytes are read.

Structs parse to plain dicts (no construct ``Container``), arrays to lists. A struct hands its
dict-so-far to its fields as the context (``r`` in emitted code); only ``SizedBytes`` looks at it,
since Kafka's own fields never refer to each other. Errors are ``WireError`` carrying the field path.
"""

from __future__ import annotations

from collections.abc import Callable
from struct import calcsize as struct_size
from typing import BinaryIO

from construct import Construct

from . import runtime
from .errors import UNREAD, Truncated, WireError

_IMPORT = (
    "from kafka_protocol_source.codec.runtime import *\n"
    "from kafka_protocol_source.codec.runtime import _I8, _I16, _I32, _I64, _U16, _U32, _F64"
)

# Fixed-width reads inline in compiled code; a short read raises struct.error there, and the
# caller re-parses interpreted to report where (see Decoder._parse in decoder.py).
_INLINE_FIXED = {
    "int8": ("_I8", 1),
    "int16": ("_I16", 2),
    "int32": ("_I32", 4),
    "int64": ("_I64", 8),
    "uint16": ("_U16", 2),
    "uint32": ("_U32", 4),
    "float64": ("_F64", 8),
}
# Consecutive fixed-width fields of a struct are read with one struct.unpack (format characters
# here): one read and one unpack instead of one per field. A short read still raises struct.error.
_FORMAT_CHAR = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "uint32": "I", "float64": "d"}
# Array counts up to this need no check against the bytes left (see runtime._checked_count), so
# compiled code reads them inline and hands anything else to read_array_count.
_SMALL_COUNT = 32


class KafkaConstruct(Construct):
    """Parse-only construct; building is done by independent codecs in the tests, not here."""

    def _emitparse(self, code):
        code.append(_IMPORT)
        return self.emit(code)

    def emit(self, code) -> str:
        raise NotImplementedError

    def _build(self, obj, stream, context, path):
        raise NotImplementedError("kafka-wire decodes only")


class Primitive(KafkaConstruct):
    """A scalar, string or bytes field; ``kind`` is the spec type name."""

    def __init__(self, kind: str, nullable: bool = False, compact: bool = False):
        super().__init__()
        self.kind, self.nullable, self.compact = kind, nullable, compact
        if kind in ("string", "bytes", "varint-string", "varint-bytes"):
            # A varint length (krammar's record-level kinds) is the same in flexible versions: never compact.
            compact_ = "compact_" if compact and not kind.startswith("varint") else ""
            name = f"read_{compact_}{kind.replace('-', '_')}"
            self.expr = f"{name}(io, {nullable})"
            reader = getattr(runtime, name)
            self.read = lambda io: reader(io, nullable)
        elif kind == "records":
            self.expr = f"read_records(io, {nullable}, {compact})"
            self.read = lambda io: runtime.read_records(io, nullable, compact)
        else:
            self.read = getattr(runtime, f"read_{kind}")
            if kind in _INLINE_FIXED:
                unpack, size = _INLINE_FIXED[kind]
                self.expr = f"{unpack}(io.read({size}))[0]"
            else:
                self.expr = f"read_{kind}(io)"

    def _parse(self, stream, context, path):
        return self.read(stream)

    def emit(self, code):
        return self.expr

    def emit_lines(self, target: str) -> list[str] | None:
        """Statements for strings and bytes: the usual short, non-null value read inline, and
        anything else (null, long, truncated) handed back to the runtime reader it emits."""
        if self.kind not in ("string", "bytes"):
            return None
        value = "v.decode('utf-8', 'replace')" if self.kind == "string" else "v"
        if self.compact:
            head, size, ok = "io.read(1)", "b[0] - 1", "b and 0 < b[0] < 0x80"
        else:
            head, size, ok = (
                ("io.read(2)", "b[0] << 8 | b[1]", "len(b) == 2 and b[0] < 0x80")
                if self.kind == "string"
                else ("io.read(4)", "int.from_bytes(b, 'big')", "len(b) == 4 and b[0] < 0x80")
            )
        return [
            f"b = {head}",
            f"if {ok}:",
            f"    n = {size}",
            "    v = io.read(n)",
            "    if len(v) == n:",
            f"        {target} = {value}",
            "    else:",
            "        io.seek(-len(b) - len(v), 1)",
            f"        {target} = {self.expr}",
            "else:",
            "    io.seek(-len(b), 1)",
            f"    {target} = {self.expr}",
        ]


class SizedBytes(KafkaConstruct):
    """krammar's ``length-field-minus``: raw bytes sized by the value of an earlier field of the
    same struct, less ``minus`` (RecordBatch's Records: ``Length - 49``)."""

    def __init__(self, source: str, minus: int):
        super().__init__()
        self.source, self.minus = source, minus

    def _parse(self, stream, context, path):
        return runtime.read_sized_by(stream, context[self.source], self.source, self.minus)

    def emit(self, code):
        return f"read_sized_by(io, r[{self.source!r}], {self.source!r}, {self.minus})"


class Array(KafkaConstruct):
    """``varint_count``: krammar's ``varint[T]``, whose count is a zigzag varint, never compact."""

    def __init__(
        self, element: Construct, nullable: bool, compact: bool, min_element_size: int, varint_count: bool = False
    ):
        super().__init__()
        self.element = element
        self.compact, self.varint_count = compact, varint_count
        if varint_count:
            self.read_count = lambda io: runtime.read_varint_array_count(io, nullable, min_element_size)
            self.count_expr = f"read_varint_array_count(io, {nullable}, {min_element_size})"
        else:
            self.read_count = lambda io: runtime.read_array_count(io, nullable, compact, min_element_size)
            self.count_expr = f"read_array_count(io, {nullable}, {compact}, {min_element_size})"

    def _parse(self, stream, context, path):
        count = self.read_count(stream)
        if count is None:
            return None
        items: list = []
        cut = runtime.PREFIX.reading  # (a count unchecked: the bytes end the elements, each one byte at least)
        for i in range(count):
            if cut and not runtime.remaining(stream):
                e = Truncated(f"array: {i} of {count} elements before the cut", stream.tell())
                e.within(f"[{i}]")
                e.partial = items
                raise e
            try:
                items.append(self.element._parse(stream, context, path))
            except WireError as e:
                e.within(f"[{i}]")
                if e.partial is not UNREAD and e.partial != {}:  # (an element cut before its first field: none)
                    items.append(e.partial)
                e.partial = items
                raise
        return items

    def emit(self, code):
        fid = code.allocateId()
        element = self.element._compileparse(code)
        if self.varint_count:
            count = [f"n = {self.count_expr}", "if n is None:", "    return None"]
        else:
            # A small count, read inline; anything else (null, large, cut) by read_array_count.
            head = "b[0] - 1 if b else -1" if self.compact else f"_U32(b)[0] if len(b) == 4 else {_SMALL_COUNT + 1}"
            count = [
                f"b = io.read({1 if self.compact else 4})",
                f"n = {head}",
                f"if not 0 <= n <= {_SMALL_COUNT}:",
                "    io.seek(-len(b), 1)",
                f"    n = {self.count_expr}",
                "    if n is None:",
                "        return None",
            ]
        body = "".join(f"    {line}\n" for line in count + self._all_at_once(code, fid))
        code.append(f"def parse_array_{fid}(io):\n{body}    return [{element} for _ in range(n)]\n")
        return f"parse_array_{fid}(io)"

    def _all_at_once(self, code, fid: int) -> list[str]:
        """For elements of fixed-width fields only (ApiVersions' api key ranges), lines that read
        the whole array with one ``iter_unpack``, each element a dict display; in flexible
        versions, when every element's tag section is empty (its one byte zero). Anything else
        (bytes cut short, a tag section with fields) is read element by element, from the start."""
        element = self.element
        if not isinstance(element, Struct) or element.tagged or not element.fields:
            return []
        if not all(isinstance(sub, Primitive) and sub.kind in _FORMAT_CHAR for _, sub in element.fields):
            return []
        fmt = ">" + "".join(_FORMAT_CHAR[sub.kind] for _, sub in element.fields) + ("B" if element.flexible else "")
        code.append(f"elements_{fid} = struct.Struct({fmt!r}).iter_unpack")
        names = [f"a{i}" for i in range(len(element.fields))] + (["t"] if element.flexible else [])
        display = ", ".join(f"{name!r}: a{i}" for i, (name, _) in enumerate(element.fields))
        only_untagged = " if not t" if element.flexible else ""
        values = f"[{{{display}}} for ({', '.join(names)},) in elements_{fid}(data){only_untagged}]"
        size = struct_size(fmt)
        return [
            f"data = io.read(n * {size})",
            f"if len(data) == n * {size}:",
            f"    items = {values}",
            "    if len(items) == n:",
            "        return items",
            "io.seek(-len(data), 1)",
        ]


class NullableStruct(KafkaConstruct):
    """KIP-893: a marker (int8 -1/1, or uvarint 0/1 inside a tagged field) then the struct."""

    def __init__(self, struct: Construct, tagged: bool):
        super().__init__()
        self.struct, self.tagged = struct, tagged

    def _parse(self, stream, context, path):
        if runtime.read_struct_marker(stream, self.tagged):
            return self.struct._parse(stream, context, path)
        return None

    def emit(self, code):
        return f"({self.struct._compileparse(code)} if read_struct_marker(io, {self.tagged}) else None)"


class Struct(KafkaConstruct):
    """Fields in wire order, then (in flexible versions) the tag section.

    ``tagged`` holds (tag, name, construct, default) for the known tagged fields.
    """

    def __init__(
        self,
        name: str,
        fields: list[tuple[str, Construct]],
        tagged: list[tuple[int, str, Construct, object]],
        flexible: bool,
    ):
        super().__init__()
        self.struct_name = name
        self.fields, self.tagged, self.flexible = fields, tagged, flexible
        self.defaults = tuple((name, default) for _, name, _, default in tagged)
        self._emitted_as = ""  # the name of its function in the code last compiled with it

    def compile_parser(self) -> Callable[[BinaryIO], dict]:
        """This struct compiled: its generated function, called with the stream alone.

        construct's entry point, ``parseall(io, this)``, only calls that function; calling it
        directly saves a frame per parse, and the ``this`` a caller would have to bind.
        """
        module = self.compile().parsefunc.__globals__
        return module[self._emitted_as]

    def _parse(self, stream, context, path):
        result: dict = {}
        for name, sub in self.fields:
            try:
                result[name] = sub._parse(stream, result, path)
            except WireError as e:
                e.within(name)
                if e.partial is not UNREAD:
                    result[name] = e.partial
                e.partial = result
                raise
        if self.flexible:
            known = {tag: (name, self._tagged_reader(sub, result, path)) for tag, name, sub, _ in self.tagged}
            try:
                runtime.read_tag_section(stream, result, known, self.defaults)
            except WireError as e:
                e.partial = result
                raise
        return result

    @staticmethod
    def _tagged_reader(sub, context, path):
        return lambda io: sub._parse(io, context, path)

    def emit(self, code):
        fid = code.allocateId()
        self._emitted_as = f"parse_struct_{fid}"
        lines = [f"def {self._emitted_as}(io):  # {self.struct_name}", "    r = {}"]
        for group in _runs_of_fixed(self.fields):
            if len(group) > 1:
                unpack = f"fixed_{fid}_{len(lines)}"
                fmt = ">" + "".join(_FORMAT_CHAR[sub.kind] for _, sub in group)
                code.append(f"{unpack} = struct.Struct({fmt!r}).unpack")
                targets = ", ".join(f"r[{name!r}]" for name, _ in group)
                lines.append(f"    {targets} = {unpack}(io.read({struct_size(fmt)}))")
                continue
            ((name, sub),) = group
            inline = sub.emit_lines(f"r[{name!r}]") if isinstance(sub, Primitive) else None
            if inline:
                lines += ["    " + line for line in inline]
            else:
                lines.append(f"    r[{name!r}] = {sub._compileparse(code)}")
        if self.flexible:
            known = ", ".join(
                f"{tag}: ({name!r}, lambda io: {sub._compileparse(code)})" for tag, name, sub, _ in self.tagged
            )
            code.append(f"tags_{fid} = {{{known}}}\ndefaults_{fid} = {self.defaults!r}")
            # The usual tag section is empty: one zero byte, then every tagged field's default.
            lines += ["    t = io.read(1)", "    if t == b'\\x00':"]
            for i, (name, default) in enumerate(self.defaults):
                value = repr(default) if _plain(default) else f"copy_default(defaults_{fid}[{i}][1])"
                lines.append(f"        r[{name!r}] = {value}")
            lines += [
                "        pass",
                "    else:",
                "        io.seek(-len(t), 1)",
                f"        read_tag_section(io, r, tags_{fid}, defaults_{fid})",
            ]
        lines.append("    return r")
        code.append("\n".join(lines))
        return f"{self._emitted_as}(io)"


def _runs_of_fixed(fields: list[tuple[str, Construct]]) -> list[list[tuple[str, Construct]]]:
    """The fields in order, consecutive fixed-width ones grouped (to be read with one unpack)."""
    groups: list[list[tuple[str, Construct]]] = []
    after_fixed = False
    for name, sub in fields:
        fixed = isinstance(sub, Primitive) and sub.kind in _FORMAT_CHAR
        if fixed and after_fixed:
            groups[-1].append((name, sub))
        else:
            groups.append([(name, sub)])
        after_fixed = fixed
    return groups


def _plain(value) -> bool:
    """Whether ``repr(value)`` is source that builds a fresh, equal value each time it runs (a
    default emitted as a literal): numbers, strings, bytes, None, and dicts and lists of them."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    return value is None or isinstance(value, (bool, int, str, bytes))
