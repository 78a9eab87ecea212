"""Hypothesis strategies for oracle-encoded Kafka messages.

Owns: record sets built with kafka-python's record builders, kio message generation (kio's
constrained types resolve through ``st.from_type``; only ``Records`` needs registering), and
value generation for kafka-python's JSON-driven structs.

Does not own: encoding a full frame (the oracle test modules do that with the oracle's own
serialisers) or normalisation (``normalise.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import struct
import types
import typing
import uuid
from typing import Any

from hypothesis import strategies as st

# Small sizes keep each example cheap: the point is field coverage, not volume.
SMALL_LISTS = {"min_size": 0, "max_size": 3}


# Now and then a string, bytes or primitive array of 128+ items, so compact (varint) lengths
# take two bytes and legacy lengths leave the one-byte range.
def _mostly_short(short: st.SearchStrategy, long: st.SearchStrategy) -> st.SearchStrategy:
    return st.integers(0, 7).flatmap(lambda roll: long if roll == 7 else short)


TEXT = _mostly_short(st.text(max_size=10), st.text(min_size=128, max_size=140))
BINARY = _mostly_short(st.binary(max_size=10), st.binary(min_size=128, max_size=140))


def primitive_list(item: st.SearchStrategy) -> st.SearchStrategy:
    return _mostly_short(st.lists(item, **SMALL_LISTS), st.lists(item, min_size=128, max_size=130))


# --------------------------------------------------------------------------- record sets

_KEYS = st.one_of(st.none(), st.binary(max_size=12))
_HEADERS = st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=6))), max_size=2)

CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = 0, 1, 2, 3, 4


@st.composite
def record_batch_v2(draw, compression: int = CODEC_NONE) -> bytes:
    """One magic-2 record batch (KIP-98) built by kafka-python's DefaultRecordBatchBuilder."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    transactional = draw(st.booleans())
    producer_id = draw(st.integers(0, 2**40)) if transactional else draw(st.sampled_from([-1, 7]))
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=-1 if producer_id == -1 else 3,
        base_sequence=-1 if producer_id == -1 else draw(st.integers(0, 1000)),
        batch_size=1 << 20,
    )
    first_ts = draw(st.integers(0, 2**41))
    for offset in range(draw(st.integers(1, 3))):
        builder.append(offset, first_ts + draw(st.integers(0, 5000)), draw(_KEYS), draw(_KEYS), draw(_HEADERS))
    raw = bytearray(builder.build())
    # BaseOffset and PartitionLeaderEpoch are outside the v2 CRC: give them realistic values.
    struct.pack_into(">q", raw, 0, draw(st.integers(0, 2**40)))
    struct.pack_into(">i", raw, 12, draw(st.integers(-1, 100)))
    return bytes(raw)


@st.composite
def legacy_message_set(draw, magic: int, compression: int = CODEC_NONE) -> bytes:
    """A magic-0/1 message set built by kafka-python's LegacyRecordBatchBuilder."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=1 << 20)
    for offset in range(draw(st.integers(1, 3))):
        builder.append(offset, draw(st.integers(0, 2**41)), draw(_KEYS), draw(_KEYS))
    return bytes(builder.build())


def record_set() -> st.SearchStrategy[bytes]:
    """Zero to two uncompressed batches back to back: mostly v2, sometimes a magic 0/1 message
    set. A records field is opaque to the message schema (the magic byte says how to read it),
    so any version may carry either; codecs are covered by tests/records."""
    batch = st.one_of(record_batch_v2(), record_batch_v2(), st.sampled_from([0, 1]).flatmap(legacy_message_set))
    return st.lists(batch, max_size=2).map(b"".join)


# --------------------------------------------------------------------------- kio


def register_kio_types() -> None:
    """kio resolves every field type through from_type except Records: give it valid batches."""
    from kio.static.primitive import Records

    st.register_type_strategy(Records, record_set().map(Records))


@functools.cache
def kio_entity(cls: type) -> st.SearchStrategy:
    """A kio message or nested entity, every field drawn from its annotated type.

    Like ``st.from_type(cls)`` (kio's constrained ints, timedeltas and datetimes resolve through
    their registered strategies), but with arrays capped at three items and short strings, so a
    deeply nested message stays cheap to draw, encode and decode.
    """
    hints = typing.get_type_hints(cls)
    members = {}
    for f in dataclasses.fields(cls):
        members[f.name] = _kio_type(hints[f.name])
        if "tag" in f.metadata:
            # kio leaves a tagged field that equals its default off the wire (for a struct: a
            # struct of defaults); draw the default often so the decoder's fill-in of absent
            # tagged fields is exercised too.
            from kio.serial._implicit_defaults import get_tagged_field_default

            members[f.name] = st.one_of(st.just(get_tagged_field_default(f)), members[f.name])
    return st.builds(cls, **members)


def _kio_type(tp: Any) -> st.SearchStrategy:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        assert len(inner) == 1, tp
        return st.one_of(st.none(), _kio_type(inner[0]))
    if origin is tuple:
        item, ellipsis = typing.get_args(tp)
        assert ellipsis is Ellipsis, tp
        if dataclasses.is_dataclass(item):
            return st.lists(_kio_type(item), **SMALL_LISTS).map(tuple)
        return primitive_list(_kio_type(item)).map(tuple)
    if dataclasses.is_dataclass(tp):
        return st.deferred(lambda: kio_entity(tp))
    if isinstance(tp, type) and issubclass(tp, str):
        return TEXT.map(tp)
    if tp is bytes:
        return BINARY
    return st.from_type(tp)


def kio_request_header(header_cls: type, api_key: int, version: int) -> st.SearchStrategy:
    fields = {f.name for f in __import__("dataclasses").fields(header_cls)}
    kwargs: dict[str, Any] = {
        "request_api_key": st.just(api_key),
        "request_api_version": st.just(version),
        "correlation_id": st.integers(-(2**31), 2**31 - 1),
    }
    if "client_id" in fields:
        kwargs["client_id"] = st.one_of(st.none(), st.text(max_size=10))
    return st.builds(header_cls, **kwargs)


# --------------------------------------------------------------------------- kafka-python

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def _kp_simple(type_str: str) -> st.SearchStrategy:
    if type_str in _INT_RANGES:
        return st.integers(*_INT_RANGES[type_str])
    if type_str == "bool":
        return st.booleans()
    if type_str == "float64":
        return st.floats(allow_nan=False)
    if type_str == "uuid":
        return st.uuids()
    if type_str == "string":
        return TEXT
    if type_str == "bytes":
        return BINARY
    if type_str == "records":
        return record_set()
    if type_str == "bitfield":
        # kafka-python's patched authorized-operations fields: a set of bit positions;
        # None encodes as INT32_MIN (Kafka's "not requested" sentinel).
        return st.one_of(st.none(), st.sets(st.integers(0, 30), max_size=4))
    raise NotImplementedError(type_str)


def kp_value(field: Any, version: int) -> st.SearchStrategy:
    """A value for one kafka-python field at one version (None where the version allows it)."""
    if field.is_struct():
        inner = kp_struct(field, version)
    elif field.is_struct_array():
        inner = st.lists(kp_struct(field, version), **SMALL_LISTS)
    elif field.is_array():
        inner = primitive_list(_kp_simple(field.array_of._type_str))
    else:
        inner = _kp_simple(field._type_str)
    tagged = field.tagged_field_q(version)
    if field.nullable_for_version_q(version) and not (tagged and field.is_struct()):
        # (A tagged struct of None is left off the wire by kafka-python, and Kafka then reads
        # the struct's default, not null: only non-null tagged structs have a known reading.)
        inner = st.one_of(st.none(), inner)
    if tagged and not field.is_struct() and not field.is_struct_array():
        # kafka-python leaves a tagged field equal to its default off the wire: draw the default
        # often so the decoder's fill-in of absent tagged fields is exercised too.
        inner = st.one_of(st.just(field.default), inner)
    return inner


def kp_struct(struct_field: Any, version: int) -> st.SearchStrategy:
    """A kafka-python DataContainer for ``struct_field`` with every in-version field set."""
    if not struct_field.has_data_class():
        # kafka-python makes nested data classes as a side effect of subclassing; some nested
        # structs (e.g. DescribeProducersResponse's ActiveProducers) are left without one.
        # Make it the way DataContainer.__init_subclass__ does.
        from kafka.protocol.data_container import DataContainer

        struct_field.set_data_class(type(struct_field.type_str, (DataContainer,), {"_struct": struct_field}))
    members = {f.name: kp_value(f, version) for f in struct_field._fields if f.for_version_q(version)}
    return st.fixed_dictionaries(members).map(lambda vals: struct_field.data_class(**vals))


def kp_message(msg_cls: type, version: int) -> st.SearchStrategy:
    members = {f.name: kp_value(f, version) for f in msg_cls._struct._fields if f.for_version_q(version)}
    return st.fixed_dictionaries(members).map(lambda vals: msg_cls[version](**vals))


uuids = st.uuids
__all__ = [
    "kio_request_header",
    "kp_message",
    "kp_struct",
    "kp_value",
    "legacy_message_set",
    "record_batch_v2",
    "record_set",
    "register_kio_types",
    "uuid",
]
