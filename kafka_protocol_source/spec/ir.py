"""The intermediate representation of Kafka message definitions.

Two layers, both plain frozen dataclasses with no construct or Spark in sight:

* ``MessageDef`` / ``FieldDef``: a message as the spec states it, across all versions
  (what the JSON front-end and the krammar front-end both lower into).
* ``Struct`` / ``Field``: the same message resolved at ONE version (``resolve.py``), with
  every version question already answered, so a parser built from it has no version branches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .versions import NONE, VersionRange

PRIMITIVES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "uint32",
        "float64",
        "string",
        "bytes",
        "uuid",
        "records",
        # record-level types with zigzag varint encodings; only krammar definitions spell these
        "varint",
        "varlong",
        "varint-string",
        "varint-bytes",
    }
)
ALWAYS_NULLABLE = frozenset({"varint-string", "varint-bytes"})  # a negative varint length is null
INTEGERS = frozenset({"int8", "int16", "uint16", "int32", "int64", "uint32", "varint", "varlong"})


@dataclass(frozen=True, slots=True)
class TypeRef:
    """``int32``, ``[]int32``, ``Topic`` or ``[]Topic`` from a spec's ``type`` attribute.

    ``varint_count``: the array's element count is a zigzag varint (krammar's ``varint[T]``),
    not an int32 or, in flexible versions, a compact uvarint.
    """

    name: str  # primitive or struct name, without the array prefix
    is_array: bool = False
    varint_count: bool = False

    @classmethod
    def parse(cls, text: str) -> TypeRef:
        if text.startswith("varint[]"):
            return cls(text[8:], True, True)
        if text.startswith("[]"):
            return cls(text[2:], True)
        return cls(text, False)

    @property
    def is_primitive(self) -> bool:
        return self.name in PRIMITIVES

    def __str__(self) -> str:
        return ("varint[]" if self.varint_count else "[]" if self.is_array else "") + self.name


@dataclass(frozen=True, slots=True)
class FieldDef:
    name: str
    type: TypeRef
    versions: VersionRange
    nullable_versions: VersionRange = NONE
    tagged_versions: VersionRange = NONE
    tag: int | None = None
    flexible_versions: VersionRange | None = None  # field-level override (RequestHeader.ClientId)
    default: str | None = None
    map_key: bool = False
    entity_type: str | None = None
    ignorable: bool = False
    zero_copy: bool = False
    fields: tuple[FieldDef, ...] = ()  # inline struct definition, if any
    # krammar's ``length-field-minus``: raw bytes whose size is an earlier field's value minus N
    # (RecordBatch's Records); the type is then ``bytes``.
    length_from: tuple[str, int] | None = None


@dataclass(frozen=True, slots=True)
class StructDef:
    """A named struct from ``commonStructs``."""

    name: str
    versions: VersionRange
    fields: tuple[FieldDef, ...]


@dataclass(frozen=True, slots=True)
class MessageDef:
    name: str  # e.g. "ProduceRequest"
    kind: str  # "request", "response", "header" or "data"
    api_key: int | None
    valid_versions: VersionRange
    flexible_versions: VersionRange
    fields: tuple[FieldDef, ...]
    common_structs: tuple[StructDef, ...] = ()  # a lookup table: kept sorted by name (see below)
    latest_version_unstable: bool = False
    deprecated_versions: VersionRange = NONE
    listeners: tuple[str, ...] = ()
    version_sources: tuple[tuple[VersionRange, str], ...] = ()  # which upstream each version came from
    api_name: str = dataclasses.field(init=False, compare=False, default="")

    def __post_init__(self):
        name = self.name
        for suffix in ("Request", "Response"):
            if self.kind == suffix.lower() and name.endswith(suffix):
                name = name[: -len(suffix)]
        object.__setattr__(self, "api_name", name)  # ``ProduceRequest`` -> ``Produce``
        # Order carries no meaning (JSON files list shared structs in any order; krammar must
        # define them before use), so both front-ends give equal IR for the same structs.
        object.__setattr__(self, "common_structs", tuple(sorted(self.common_structs, key=lambda s: s.name)))


# --- resolved at one version ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct at one version.

    ``kind`` is a primitive name, ``"array"`` or ``"struct"``. For arrays ``element`` is a
    primitive name or a ``Struct``; for structs ``struct`` is the resolved ``Struct``.
    ``compact`` says the flexible (KIP-482) encoding applies to this field's length prefix.
    """

    name: str  # snake_case, as it appears in decoded dicts
    spec_name: str
    kind: str
    nullable: bool
    compact: bool
    tag: int | None = None
    default: Any = None
    element: str | Struct | None = None
    struct: Struct | None = None
    path: str = ""  # dotted spec path inside the message, for messages and errors
    varint_count: bool = False  # arrays: zigzag varint element count (``varint[T]``)
    length_from: tuple[str, int] | None = None  # (snake_case name of an earlier field, minus)


@dataclass(frozen=True, slots=True)
class Struct:
    name: str
    fields: tuple[Field, ...]  # in wire order, tagged fields excluded
    tagged: tuple[Field, ...] = ()  # known tagged fields, by tag
    flexible: bool = False  # a tag section ends this struct
