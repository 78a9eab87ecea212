"""Random but well-formed frames of any message at any version, written from the spec IR.

Owns one writer over a resolved ``Struct`` (``registry.resolved(name, version)``): every
primitive, compact and classic lengths, nullable values, arrays, nested and nullable structs,
tag sections with known and unknown tags, and ``records`` fields filled by `recordgen`. Values
are mostly small and plain with the occasional extreme, and a few knobs make valid-but-odd
encodings (over-long varints, which Kafka reads up to five bytes). The frame header comes from
the same writer, at the header version the spec rules give. Does not mutate (see `mutate`).
"""

from __future__ import annotations

import random
import struct
import uuid

from kafka_protocol_source.spec.headers import request_header_version, response_header_version
from kafka_protocol_source.spec.ir import Struct

from . import recordgen

_FIXED = {
    "bool": ">?",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
    "int64": ">q",
    "float64": ">d",
}
_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint16": 16, "uint32": 32, "varint": 32, "varlong": 64}
MAX_DEPTH = 6


class Writer:
    def __init__(self, rng: random.Random, *, odd: float = 0.0, fill: float = 1.0):
        self.rng = rng
        self.odd = odd  # chance of an odd-but-valid encoding at each varint
        self.fill = fill  # how eagerly arrays and optional parts are filled (0..1)

    # -- primitives ------------------------------------------------------------------------
    def uvarint(self, n: int) -> bytes:
        out = recordgen.uvarint(n)
        if self.odd and self.rng.random() < self.odd and len(out) < 5:
            # Redundant continuation bytes: same value, longer encoding (still at most 5 bytes).
            extra = self.rng.randrange(1, 6 - len(out))
            out = bytes(b | 0x80 for b in out) + b"\x80" * (extra - 1) + b"\x00"
        return out

    def integer(self, kind: str) -> int:
        bits = _BITS[kind]
        signed = not kind.startswith("uint")
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        r = self.rng.random()
        if r < 0.7:
            return self.rng.randrange(max(low, -1), min(high, 100) + 1)
        if r < 0.85:
            return self.rng.choice((low, high, 0, -1 if signed else 1))
        return self.rng.randrange(low, high + 1)

    def text(self) -> bytes:
        r = self.rng.random()
        if r < 0.6:
            return "".join(
                self.rng.choice("abcdefghijklmnopqrstuvwxyz-._0123456789") for _ in range(self.rng.randrange(0, 16))
            ).encode()
        if r < 0.9:
            return "".join(
                chr(self.rng.choice((0x41, 0xE9, 0x3B1, 0x4E2D, 0x1F600)) + self.rng.randrange(8))
                for _ in range(self.rng.randrange(0, 6))
            ).encode()
        return self.rng.randbytes(self.rng.randrange(0, 8))  # not always UTF-8

    def sized(self, data: bytes | None, compact: bool, wide: bool) -> bytes:
        if data is None:
            return b"\x00" if compact else (b"\xff\xff\xff\xff" if wide else b"\xff\xff")
        if compact:
            return self.uvarint(len(data) + 1) + data
        return struct.pack(">i" if wide else ">h", len(data)) + data

    def primitive(self, kind: str, nullable: bool, compact: bool) -> bytes:
        rng = self.rng
        if kind in _FIXED:
            if kind == "bool":
                return struct.pack(">?", rng.random() < 0.5)
            if kind == "float64":
                return struct.pack(">d", rng.choice((0.0, 1.5, -2.0, float("inf"), float("nan"), rng.random())))
            return struct.pack(_FIXED[kind], self.integer(kind))
        if kind == "varint" or kind == "varlong":
            return recordgen.zigzag(self.integer(kind))
        if kind == "uuid":
            return rng.choice((bytes(16), uuid.UUID(int=rng.getrandbits(128)).bytes))
        null = nullable and rng.random() < 0.2
        if kind == "records":
            if null:
                return self.sized(None, compact, True)
            return self.sized(recordgen.random_records(rng) if rng.random() < self.fill else b"", compact, True)
        if kind in ("varint-string", "varint-bytes"):
            if rng.random() < 0.2:
                return recordgen.varbytes(None)
            return recordgen.varbytes(self.text() if kind == "varint-string" else rng.randbytes(rng.randrange(0, 12)))
        data = None if null else (self.text() if kind == "string" else rng.randbytes(rng.randrange(0, 24)))
        return self.sized(data, compact, kind == "bytes")

    # -- composites ------------------------------------------------------------------------
    def count(self, depth: int) -> int:
        if depth >= MAX_DEPTH or self.rng.random() > self.fill:
            return 0
        return self.rng.choice((0, 1, 1, 2, 3))

    def array(self, field, depth: int) -> bytes:
        if field.nullable and self.rng.random() < 0.2:
            if field.varint_count:
                return recordgen.zigzag(-1)
            return b"\x00" if field.compact else b"\xff\xff\xff\xff"
        n = self.count(depth)
        el = field.element
        items = b"".join(
            self.struct(el, depth + 1) if isinstance(el, Struct) else self.primitive(el, False, field.compact)
            for _ in range(n)
        )
        if field.varint_count:
            head = recordgen.zigzag(n)
        else:
            head = self.uvarint(n + 1) if field.compact else struct.pack(">i", n)
        return head + items

    def field(self, field, depth: int) -> bytes:
        if field.kind == "array":
            return self.array(field, depth)
        if field.kind == "struct":
            inner = self.struct(field.struct, depth + 1)
            if not field.nullable:
                return inner
            return b"\xff" if self.rng.random() < 0.2 else b"\x01" + inner
        if field.length_from is not None:
            return self.rng.randbytes(self.rng.randrange(0, 8))
        return self.primitive(field.kind, field.nullable, field.compact)

    def struct(self, s: Struct, depth: int = 0) -> bytes:
        parts = [self.field(f, depth) for f in s.fields]
        if s.flexible:
            entries = []
            for f in s.tagged:
                if self.rng.random() < 0.3 * self.fill:
                    value = self.field(f, depth)
                    entries.append(self.uvarint(f.tag) + self.uvarint(len(value)) + value)
            if self.rng.random() < 0.1:
                value = self.rng.randbytes(self.rng.randrange(0, 6))
                entries.append(self.uvarint(self.rng.choice((99, 1000, 2**31 - 1))) + self.uvarint(len(value)) + value)
            parts.append(self.uvarint(len(entries)) + b"".join(entries))
        return b"".join(parts)


def request_frame(registry, api_key: int, version: int, rng: random.Random, **knobs) -> bytes:
    """A whole request frame (no size prefix): header at the right version, then a body."""
    message = registry.request(api_key)
    writer = Writer(rng, **knobs)
    header = registry.resolved("RequestHeader", request_header_version(message, version))
    head = bytearray(writer.struct(header))
    head[0:4] = struct.pack(">hh", api_key, version)
    return bytes(head) + writer.struct(registry.resolved(message.name, version))


def response_frame(registry, api_key: int, version: int, rng: random.Random, **knobs) -> bytes:
    message = registry.response(api_key)
    writer = Writer(rng, **knobs)
    header = registry.resolved("ResponseHeader", response_header_version(message, version))
    return writer.struct(header) + writer.struct(registry.resolved(message.name, version))


def every_api_version(registry) -> list[tuple[int, int]]:
    """Every (api key, version) the registry knows for both requests and responses."""
    out = []
    for key in registry.api_keys():
        request, response = registry.request(key), registry.response(key)
        if response is None:
            continue
        versions = request.valid_versions
        out += [
            (key, v) for v in range(versions.low, versions.high + 1) if v in versions and v in response.valid_versions
        ]
    return out
