"""Encode decoded Python values (dicts, lists, str, int, float, bool, None, bytes) as Spark VARIANT.

Spark's variant binary format (common/variant/README.md in the Spark repository): a value
buffer and a metadata buffer holding the dictionary of object keys. Values are encoded bottom
up, each child to its own bytes, so no header ever has to be shifted into place afterwards.
Bytes become variant BINARY; integers pick the smallest of int8/16/32/64; other numbers double.

This runs once per exchange body on the Spark path (a body is a few hundred values), so it is
written for CPython: one function per container kind, scalars of the common types encoded in
the container's loop without a call, ready-made headers for small ints and short strings, and
the one-byte-offsets case (nearly every Kafka object) packed with ``bytes(list)``.
"""

from __future__ import annotations

import struct
from itertools import accumulate

_NULL, _TRUE, _FALSE = b"\x00", bytes([1 << 2]), bytes([2 << 2])
_INT8, _INT16, _INT32, _INT64, _DOUBLE = 3 << 2, 4 << 2, 5 << 2, 6 << 2, 7 << 2
_BINARY, _LONG_STRING = 15 << 2, 16 << 2
_F64 = struct.Struct("<d")
_I16, _I32, _I64 = struct.Struct("<Bh"), struct.Struct("<Bi"), struct.Struct("<Bq")
_BIN_HEAD, _LONG_STRING_HEAD = struct.Struct("<BI"), struct.Struct("<BI")
_MAX_SHORT_STRING = 63
_SMALL_INTS = {i: bytes((_INT8, i & 0xFF)) for i in range(-0x80, 0x80)}  # int8: the most common value
_SHORT_STRING_HEADS = [bytes((n << 2 | 1,)) for n in range(_MAX_SHORT_STRING + 1)]
_SMALL = 0x100  # below it, counts, field ids and offsets take one byte each


def _size_of(n: int) -> int:
    return 1 if n < 0x100 else 2 if n < 0x10000 else 3 if n < 0x1000000 else 4


def _int(v: int) -> bytes:
    small = _SMALL_INTS.get(v)
    if small is not None:
        return small
    if -0x8000 <= v < 0x8000:
        return _I16.pack(_INT16, v)
    if -0x80000000 <= v < 0x80000000:
        return _I32.pack(_INT32, v)
    if -(1 << 63) <= v < (1 << 63):
        return _I64.pack(_INT64, v)
    return _str(str(v))


def _str(v: str) -> bytes:
    raw = v.encode("utf-8", "surrogatepass")
    n = len(raw)
    if n <= _MAX_SHORT_STRING:
        return _SHORT_STRING_HEADS[n] + raw
    return _LONG_STRING_HEAD.pack(_LONG_STRING, n) + raw


def _value(v, keys: dict) -> bytes:
    t = type(v)
    if t is dict:
        return _object(v, keys)
    if t is int:
        return _int(v)
    if t is list or t is tuple:
        return _array(v, keys)
    if t is str:
        return _str(v)
    if v is None:
        return _NULL
    if t is bool:
        return _TRUE if v else _FALSE
    if t is bytes or t is bytearray or t is memoryview:
        return _BIN_HEAD.pack(_BINARY, len(v)) + bytes(v)
    if t is float:
        return bytes((_DOUBLE,)) + _F64.pack(v)
    if isinstance(v, dict):
        return _object(v, keys)
    return _str(str(v))


def _array(items, keys: dict) -> bytes:
    parts = []
    offsets = [0]
    total = 0
    for v in items:
        t = type(v)
        if t is int:
            p = _SMALL_INTS.get(v) or _int(v)
        elif t is dict:
            p = _object(v, keys)
        elif v is None:
            p = _NULL
        else:
            p = _value(v, keys)
        parts.append(p)
        total += len(p)
        offsets.append(total)
    n = len(parts)
    if n < _SMALL and total < _SMALL:
        return bytes((3, n, *offsets)) + b"".join(parts)  # header: offsets 1 byte, count 1 byte
    return _container(parts, offsets, 3, None)


def _object(obj: dict, keys: dict) -> bytes:
    try:
        names = sorted(obj)  # readers binary-search fields by key
    except TypeError:  # keys of mixed types: compare them as the strings they are stored as
        return _object_of_any_keys(obj, keys)
    ids = []
    parts = []
    offsets = [0]
    total = 0
    for k in names:
        kid = keys.get(k)
        if kid is None:
            if type(k) is not str:  # checked for new keys only: a known key is a str (an unused entry is harmless)
                return _object_of_any_keys(obj, keys)
            kid = keys[k] = len(keys)
        ids.append(kid)
        v = obj[k]
        t = type(v)
        if t is int:
            p = _SMALL_INTS.get(v) or _int(v)
        elif t is dict:
            p = _object(v, keys)
        elif v is None:
            p = _NULL
        elif t is str and len(v) <= _MAX_SHORT_STRING and v.isascii():
            p = _SHORT_STRING_HEADS[len(v)] + v.encode("ascii")
        else:
            p = _value(v, keys)
        parts.append(p)
        total += len(p)
        offsets.append(total)
    n = len(parts)
    if n < _SMALL and total < _SMALL and len(keys) <= _SMALL:
        return bytes((2, n, *ids, *offsets)) + b"".join(parts)  # ids, offsets and count 1 byte each
    return _container(parts, offsets, 2, ids)


def _object_of_any_keys(obj: dict, keys: dict) -> bytes:
    entries = []
    for key, value in obj.items():
        key = str(key)
        kid = keys.get(key)
        if kid is None:
            kid = keys[key] = len(keys)
        entries.append((key, kid, _value(value, keys)))
    entries.sort(key=lambda e: e[0])
    parts = [e[2] for e in entries]
    return _container(parts, list(accumulate(map(len, parts), initial=0)), 2, [e[1] for e in entries])


def _container(parts: list[bytes], offsets: list[int], basic_type: int, ids: list[int] | None) -> bytes:
    n = len(parts)
    large = n > 0xFF
    offset_size = _size_of(offsets[-1])
    if ids is None:
        head = ((large << 2 | (offset_size - 1)) << 2) | basic_type
        id_bytes = b""
    else:
        id_size = _size_of(max(ids, default=0))
        head = ((large << 4 | (id_size - 1) << 2 | (offset_size - 1)) << 2) | basic_type
        id_bytes = _pack(ids, id_size)
    count = n.to_bytes(4 if large else 1, "little")
    return b"".join((bytes((head,)), count, id_bytes, _pack(offsets, offset_size), *parts))


def _metadata(keys: dict) -> bytes:
    names = [k.encode("utf-8", "surrogatepass") for k in keys]
    total = sum(map(len, names))
    offsets = list(accumulate(map(len, names), initial=0))
    if total < _SMALL and len(names) < _SMALL:
        return bytes((1, len(names), *offsets)) + b"".join(names)  # version 1, keys not sorted, 1-byte offsets
    offset_size = _size_of(max(total, len(names)))
    header = bytes((1 | (offset_size - 1) << 6,))
    return b"".join((header, _pack([len(names)], offset_size), _pack(offsets, offset_size), *names))


def _pack(values: list[int], size: int) -> bytes:
    """Little-endian unsigned integers of ``size`` bytes each."""
    if size == 1:
        return bytes(values)
    if size == 2:
        return struct.pack(f"<{len(values)}H", *values)
    if size == 4:
        return struct.pack(f"<{len(values)}I", *values)
    return b"".join(v.to_bytes(3, "little") for v in values)


class VariantEncoder:
    """Encodes one value; ``encode`` returns (value, metadata) as Spark expects them."""

    __slots__ = ()

    def encode(self, value) -> tuple[bytes, bytes]:
        keys: dict[str, int] = {}
        data = _value(value, keys)
        return data, _metadata(keys)


def to_variant(value) -> tuple[bytes, bytes]:
    return VariantEncoder().encode(value)
