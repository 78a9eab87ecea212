"""Resolve a ``MessageDef`` at one version into a ``Struct`` tree.

Every version question (is this field present, nullable, tagged, compact?) is answered here,
once, so the parser builder sees a fixed layout. Defaults follow Kafka's generator: a spec
``default`` if given, else zero / empty / false, and ``null`` only where the spec says so.
"""

from __future__ import annotations

from typing import Any

from .ir import INTEGERS, Field, FieldDef, MessageDef, Struct
from .names import snake_case

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "varint": 32, "varlong": 64}
_UINT_RANGES = {"uint16": 16, "uint32": 32}
_INTS = INTEGERS


class SpecError(ValueError):
    """A definition that cannot be resolved (unknown struct type, bad version)."""


def resolve(message: MessageDef, version: int) -> Struct:
    if version not in message.valid_versions:
        raise SpecError(f"{message.name} has no version {version} (valid: {message.valid_versions})")
    structs = _struct_table(message)
    flexible = version in message.flexible_versions
    return _resolve_struct(message.name, message.fields, version, flexible, structs, message.name)


def _struct_table(message: MessageDef) -> dict[str, tuple[FieldDef, ...]]:
    table = {s.name: s.fields for s in message.common_structs}

    def collect(fields: tuple[FieldDef, ...]) -> None:
        for f in fields:
            if f.fields:
                table.setdefault(f.type.name, f.fields)
                collect(f.fields)

    collect(message.fields)
    for s in message.common_structs:
        collect(s.fields)
    return table


def _resolve_struct(name, fields, version, flexible, structs, path) -> Struct:
    regular: list[Field] = []
    tagged: list[Field] = []
    for fd in fields:
        if version not in fd.versions:
            continue
        resolved = _resolve_field(fd, version, flexible, structs, f"{path}.{fd.name}")
        if flexible and version in fd.tagged_versions:
            if fd.tag is None:
                raise SpecError(f"{path}.{fd.name} is tagged at v{version} but has no tag number")
            tagged.append(resolved)
        else:
            if resolved.length_from is not None:
                _check_length_source(resolved, regular)
            regular.append(resolved)
    tagged.sort(key=lambda f: f.tag if f.tag is not None else -1)  # every tagged field has a tag (checked above)
    return Struct(name=name, fields=tuple(regular), tagged=tuple(tagged), flexible=flexible)


def _resolve_field(fd: FieldDef, version, flexible, structs, path) -> Field:
    nullable = version in fd.nullable_versions
    compact = flexible if fd.flexible_versions is None else version in fd.flexible_versions
    tag = fd.tag if (flexible and version in fd.tagged_versions) else None
    common = dict(name=snake_case(fd.name), spec_name=fd.name, nullable=nullable, compact=compact, tag=tag, path=path)
    if fd.length_from is not None:
        source, minus = fd.length_from
        return Field(kind="bytes", default=b"", length_from=(snake_case(source), minus), **common)
    type_name = fd.type.name
    element: str | Struct
    if fd.type.is_primitive:
        element = type_name
    else:
        body = fd.fields or structs.get(type_name)
        if body is None:
            raise SpecError(f"{path}: unknown struct type {type_name!r}")
        element = _resolve_struct(type_name, body, version, flexible, structs, path)
    default: list | dict | None
    if fd.type.is_array:
        default = None if fd.default == "null" else []
        return Field(kind="array", element=element, default=default, varint_count=fd.type.varint_count, **common)
    if isinstance(element, Struct):
        default = None if fd.default == "null" else struct_default(element)
        return Field(kind="struct", struct=element, default=default, **common)
    return Field(kind=type_name, default=primitive_default(type_name, fd.default, nullable, path), **common)


def _check_length_source(field: Field, earlier: list[Field]) -> None:
    assert field.length_from is not None, "called for a field whose length comes from another"
    source = field.length_from[0]
    if not any(f.name == source and f.kind in _INTS for f in earlier):
        raise SpecError(f"{field.path}: its length comes from {source!r}, which is not an integer field before it")


def _int_default(type_name: str, text: str | None) -> int:
    value = int(text, 0) if text else 0
    if type_name in _UINT_RANGES:
        low, high = 0, (1 << _UINT_RANGES[type_name]) - 1
    else:
        bits = _INT_RANGES[type_name]
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise ValueError(f"{value} is outside {type_name}")
    return value


def struct_default(struct: Struct) -> dict[str, Any]:
    return {f.name: f.default for f in (*struct.fields, *struct.tagged)}


def primitive_default(type_name: str, text: str | None, nullable: bool, path: str) -> Any:
    """The value a spec ``default`` text gives a field of this primitive type; SpecError if none."""
    if text == "null":
        if not nullable:
            raise SpecError(f"{path}: default null on a field that is not nullable")
        return None
    try:
        if type_name in _INTS:
            return _int_default(type_name, text)
        if type_name == "float64":
            return float(text) if text else 0.0
        if type_name == "bool":
            if text and text.lower() not in ("true", "false"):  # JSON true/false read as "True"/"False"
                raise ValueError(text)
            return text is not None and text.lower() == "true"
    except ValueError as e:
        raise SpecError(f"{path}: bad default {text!r} for {type_name}") from e
    if type_name in ("string", "varint-string"):
        return text or ""
    if type_name == "uuid":
        return ZERO_UUID
    if type_name in ("bytes", "varint-bytes"):
        return b""
    return None  # records
