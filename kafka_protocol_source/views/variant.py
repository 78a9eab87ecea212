"""Encode decoded Python values (dicts, lists, str, int, float, bool, None, bytes) as Spark VARIANT.

Spark's variant binary format (common/variant/README.md in the Spark repository): a value
buffer and a metadata buffer holding the dictionary of object keys. Values are encoded bottom
up, each child to its own bytes, so no header ever has to be shifted into place afterwards.
Bytes become variant BINARY; integers pick the smallest of int8/16/32/64; other numbers double.
"""

from __future__ import annotations

import struct
from itertools import accumulate

_NULL, _TRUE, _FALSE = b"\x00", bytes([1 << 2]), bytes([2 << 2])
_INT8, _INT16, _INT32, _INT64, _DOUBLE = 3 << 2, 4 << 2, 5 << 2, 6 << 2, 7 << 2
_BINARY, _LONG_STRING = 15 << 2, 16 << 2
_F64 = struct.Struct("<d")
_MAX_SHORT_STRING = 63


def _size_of(n: int) -> int:
    return 1 if n < 0x100 else 2 if n < 0x10000 else 3 if n < 0x1000000 else 4


class VariantEncoder:
    """Encodes one value; ``finish`` returns (value, metadata) as Spark expects them."""

    __slots__ = ("keys",)

    def __init__(self):
        self.keys: dict[str, int] = {}

    def encode(self, value) -> tuple[bytes, bytes]:
        self.keys = {}
        data = self._value(value)
        return data, self._metadata()

    def _value(self, v) -> bytes:
        t = type(v)
        if v is None:
            return _NULL
        if t is bool:
            return _TRUE if v else _FALSE
        if t is int:
            if -0x80 <= v < 0x80:
                return bytes([_INT8]) + v.to_bytes(1, "little", signed=True)
            if -0x8000 <= v < 0x8000:
                return bytes([_INT16]) + v.to_bytes(2, "little", signed=True)
            if -0x80000000 <= v < 0x80000000:
                return bytes([_INT32]) + v.to_bytes(4, "little", signed=True)
            if -(1 << 63) <= v < (1 << 63):
                return bytes([_INT64]) + v.to_bytes(8, "little", signed=True)
            return self._value(str(v))
        if t is str:
            raw = v.encode("utf-8", "surrogatepass")
            if len(raw) <= _MAX_SHORT_STRING:
                return bytes([len(raw) << 2 | 1]) + raw
            return bytes([_LONG_STRING]) + len(raw).to_bytes(4, "little") + raw
        if t is dict:
            return self._object(v)
        if t is list or t is tuple:
            return self._array(v)
        if t is bytes or t is bytearray or t is memoryview:
            return bytes([_BINARY]) + len(v).to_bytes(4, "little") + bytes(v)
        if t is float:
            return bytes([_DOUBLE]) + _F64.pack(v)
        if isinstance(v, dict):
            return self._object(v)
        return self._value(str(v))

    def _array(self, items) -> bytes:
        parts = [self._value(item) for item in items]
        return self._container(parts, 3, None)

    def _object(self, obj: dict) -> bytes:
        keys = self.keys
        entries = []
        for key, value in obj.items():
            key = str(key)
            kid = keys.get(key)
            if kid is None:
                kid = keys[key] = len(keys)
            entries.append((key, kid, self._value(value)))
        entries.sort(key=lambda e: e[0])  # readers binary-search fields by key
        ids = [e[1] for e in entries]
        return self._container([e[2] for e in entries], 2, ids)

    @staticmethod
    def _container(parts: list[bytes], basic_type: int, ids: list[int] | None) -> bytes:
        n = len(parts)
        offsets = list(accumulate(map(len, parts), initial=0))
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

    def _metadata(self) -> bytes:
        names = [k.encode("utf-8", "surrogatepass") for k in self.keys]
        total = sum(len(n) for n in names)
        offset_size = _size_of(max(total, len(names)))
        header = bytes((1 | (offset_size - 1) << 6,))  # version 1, keys not sorted
        offsets = list(accumulate(map(len, names), initial=0))
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


def to_variant(value) -> tuple[bytes, bytes]:
    return VariantEncoder().encode(value)
