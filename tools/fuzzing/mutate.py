"""Byte-level mutations: the operators every hostile input is made of.

Owns blind edits of a byte string (bit flips, interesting values at random places, inserts,
deletes, truncation, duplication, splices, over-long varints, absurd lengths and counts).
Each operator takes a ``random.Random`` and returns new bytes, so a case is reproducible from
its seed alone. Does not know what the bytes are (frames and captures use these alike).
"""

from __future__ import annotations

import random
import struct

INT32_VALUES = (0, 1, -1, -2, 0x7FFFFFFF, -0x80000000, 0x7FFFFFFE, 0x10000, 0xFFFF, 255, 1 << 24, 1 << 30)
INT16_VALUES = (0, 1, -1, -2, 0x7FFF, -0x8000, 0xFF, 0x100)
BYTE_VALUES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE)


def overlong_varint(rng: random.Random) -> bytes:
    """A varint with too many continuation bytes (Kafka stops at 5 for int32, 10 for int64)."""
    n = rng.choice((5, 6, 10, 11, 20, 64))
    return bytes([0x80 | rng.randrange(128) if rng.random() < 0.5 else 0xFF for _ in range(n)]) + bytes(
        [rng.randrange(1, 128)]
    )


def huge_varint(rng: random.Random) -> bytes:
    """A well-formed varint whose value is absurd as a length or count."""
    value = rng.choice((2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1, 2**35))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def flip_bits(data: bytes, rng: random.Random, count: int | None = None) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(count or rng.choice((1, 1, 2, 4, 8))):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def set_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([rng.choice(BYTE_VALUES) if rng.random() < 0.7 else rng.randrange(256)]) + data[i + 1 :]


def set_int32(data: bytes, rng: random.Random, at: int | None = None) -> bytes:
    if len(data) < 4:
        return data
    i = rng.randrange(len(data) - 3) if at is None else at
    value = rng.choice(INT32_VALUES) if rng.random() < 0.8 else rng.randrange(-(2**31), 2**31)
    return data[:i] + struct.pack(">i", value) + data[i + 4 :]


def set_int16(data: bytes, rng: random.Random) -> bytes:
    if len(data) < 2:
        return data
    i = rng.randrange(len(data) - 1)
    return data[:i] + struct.pack(">h", rng.choice(INT16_VALUES)) + data[i + 2 :]


def insert_bytes(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    what = rng.choice(("random", "varint", "huge_varint", "int32", "zeros"))
    if what == "random":
        blob = rng.randbytes(rng.randrange(1, 16))
    elif what == "varint":
        blob = overlong_varint(rng)
    elif what == "huge_varint":
        blob = huge_varint(rng)
    elif what == "int32":
        blob = struct.pack(">i", rng.choice(INT32_VALUES))
    else:
        blob = bytes(rng.randrange(1, 64))
    return data[:i] + blob + data[i:]


def replace_with_varint(data: bytes, rng: random.Random) -> bytes:
    """Overwrite a byte with an over-long or huge varint (a compact length or count, say)."""
    if not data:
        return data
    i = rng.randrange(len(data))
    blob = overlong_varint(rng) if rng.random() < 0.5 else huge_varint(rng)
    return data[:i] + blob + data[i + 1 :]


def delete_range(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randrange(1, min(32, len(data) - i) + 1) :]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)] if data else data


def duplicate_range(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 64))
    times = rng.choice((1, 2, 8, 100))
    return data[:j] + data[i:j] * times + data[j:]


def splice(data: bytes, other: bytes, rng: random.Random) -> bytes:
    if not data or not other:
        return data + other
    return data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other)) :]


OPERATORS = (
    flip_bits,
    set_byte,
    set_int32,
    set_int32,
    set_int16,
    insert_bytes,
    replace_with_varint,
    delete_range,
    truncate,
    duplicate_range,
)


def mutate(
    data: bytes, rng: random.Random, rounds: int | None = None, donors: tuple[bytes, ...] = ()
) -> tuple[bytes, list[str]]:
    """Apply 1-4 random operators; returns the bytes and the operator names, in order."""
    names = []
    for _ in range(rounds or rng.choice((1, 1, 1, 2, 2, 3, 4))):
        if donors and rng.random() < 0.05:
            data = splice(data, rng.choice(donors), rng)
            names.append("splice")
            continue
        op = rng.choice(OPERATORS)
        data = op(data, rng)
        names.append(op.__name__)
    return data, names
