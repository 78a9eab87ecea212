"""Build construct parsers from a message resolved at one version.

``build_parser(struct)`` turns a resolved ``spec.ir.Struct`` into the constructs of
``constructs.py``; ``cache.py`` compiles it (construct's ``compile()``) and keeps it per process.
"""

from __future__ import annotations

from ..spec.ir import ALWAYS_NULLABLE, Field, Struct
from . import constructs as k

_FIXED_SIZE = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}
# Record-level types whose size never depends on ``compact``: a varint, or a varint length, is 1+ bytes.
_VARINT_KINDS = frozenset({"varint", "varlong", "varint-string", "varint-bytes"})


def build_parser(struct: Struct) -> k.Struct:
    return _struct(struct)


def _struct(struct: Struct) -> k.Struct:
    fields = [(f.name, _field(f, tagged=False)) for f in struct.fields]
    tagged = [(_tag(f), f.name, _field(f, tagged=True), f.default) for f in struct.tagged]
    return k.Struct(struct.name, fields, tagged, struct.flexible)


def _tag(field: Field) -> int:
    assert field.tag is not None, "resolve gives every tagged field its tag"
    return field.tag


def _element(field: Field) -> str | Struct:
    assert field.element is not None, "resolve gives every array field its element type"
    return field.element


def _held(field: Field) -> Struct:
    assert field.struct is not None, "resolve gives every struct field its struct"
    return field.struct


def _field(field: Field, tagged: bool):
    if field.kind == "array":
        element = _element(field)
        if isinstance(element, Struct):
            parser = _struct(element)
        else:
            parser = k.Primitive(element, nullable=element in ALWAYS_NULLABLE, compact=field.compact)
        return k.Array(
            parser, field.nullable, field.compact, min_size_of_element(element, field.compact), field.varint_count
        )
    if field.kind == "struct":
        parser = _struct(_held(field))
        return k.NullableStruct(parser, tagged) if field.nullable else parser
    if field.length_from is not None:
        if tagged:  # a tagged value is parsed on its own, away from the struct holding its source
            raise ValueError(f"{field.path}.{field.spec_name}: a length-field-minus field cannot be tagged")
        return k.SizedBytes(*field.length_from)
    # varint-string/bytes read -1 as null whatever the spec says (Kafka's record keys and values)
    return k.Primitive(field.kind, field.nullable or field.kind in ALWAYS_NULLABLE, field.compact)


def min_size_of_element(element: str | Struct, compact: bool) -> int:
    if isinstance(element, Struct):
        return min_struct_size(element)
    if element in _VARINT_KINDS:
        return 1
    return _FIXED_SIZE.get(element, 1 if compact else 2)


def min_struct_size(struct: Struct) -> int:
    """Fewest bytes one instance can take: bounds array counts against the bytes left."""
    size = 1 if struct.flexible else 0  # empty tag section
    for f in struct.fields:
        if f.kind == "array":
            size += 1 if f.compact or f.varint_count else 4
        elif f.kind == "struct":
            size += 1 if f.nullable else min_struct_size(_held(f))
        elif f.length_from is not None:
            pass  # may be empty
        elif f.kind in _VARINT_KINDS:
            size += 1
        elif f.kind in _FIXED_SIZE:
            size += _FIXED_SIZE[f.kind]
        elif f.kind == "string":
            size += 1 if f.compact else 2
        else:  # bytes, records
            size += 1 if f.compact else 4
    return size
