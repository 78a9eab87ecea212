"""Bytes of a Kafka ``records`` field: record batches v2, message sets v0/v1, and bombs.

Owns writing (never reading) batches the way producers do, each codec included (gzip, xerial
and raw snappy, Kafka's LZ4 frame with any block size, zstd), control batches, nested legacy
wrappers, and compression bombs: small payloads that inflate to a chosen size of zeros or of
minimal records. Bombs are built once per process, streaming, so building one never holds
its inflated size. Does not decide where records go in a frame (see `specgen`, `frame_cases`).
"""

from __future__ import annotations

import random
import struct
import zlib
from functools import cache

import cramjam
import crc32c
import zstandard

from kafka_protocol_source.records.lz4_frame import xxh32  # for the LZ4 frame header checksum

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODECS = (NONE, GZIP, SNAPPY, LZ4, ZSTD)
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_XERIAL = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
LZ4_BLOCK_CODES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
# One minimal v2 record: length 6, attributes, timestamp delta, offset delta, null key, null value, no headers.
MINIMAL_RECORD = bytes([0x0C, 0, 0, 0, 0x01, 0x01, 0])


def zigzag(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def uvarint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varbytes(data: bytes | None) -> bytes:
    return zigzag(-1) if data is None else zigzag(len(data)) + data


# -- codecs -------------------------------------------------------------------------------


def lz4_frame(data: bytes, block_code: int = 4, content_size: bool = False, block_checksum: bool = False) -> bytes:
    """Kafka's LZ4 frame: independent blocks of at most the size ``block_code`` names."""
    block_max = LZ4_BLOCK_CODES.get(block_code, 64 << 10)
    flg = 0x40 | 0x20 | (0x08 if content_size else 0) | (0x10 if block_checksum else 0)
    descriptor = bytes([flg, (block_code & 7) << 4]) + (struct.pack("<Q", len(data)) if content_size else b"")
    out = [struct.pack("<I", 0x184D2204), descriptor, bytes([(xxh32(descriptor) >> 8) & 0xFF])]
    for pos in range(0, len(data), block_max):
        block = cramjam.lz4.compress_block(data[pos : pos + block_max], store_size=False)
        out.append(struct.pack("<I", len(block)) + bytes(block))
        if block_checksum:
            out.append(struct.pack("<I", 0))
    out.append(b"\0\0\0\0")
    return b"".join(out)


def compress(codec: int, data: bytes, rng: random.Random | None = None) -> bytes:
    if codec == GZIP:
        return (
            zlib.compress(data, 6, 16 + zlib.MAX_WBITS)
            if rng is None or rng.random() < 0.8
            else zlib.compress(data[: len(data) // 2], 1, 31) + zlib.compress(data[len(data) // 2 :], 1, 31)
        )
    if codec == SNAPPY:
        if rng is not None and rng.random() < 0.3:
            return bytes(cramjam.snappy.compress_raw(data))
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL + struct.pack(">i", len(block)) + block
    if codec == LZ4:
        if rng is None:
            return lz4_frame(data)
        return lz4_frame(data, rng.choice(list(LZ4_BLOCK_CODES)), rng.random() < 0.3, rng.random() < 0.3)
    if codec == ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    return data


# -- v2 batches ----------------------------------------------------------------------------


def record(rng: random.Random, offset_delta: int) -> bytes:
    key = None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 12))
    value = None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 40))
    headers = [
        (rng.randbytes(rng.randrange(0, 6)), None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 6)))
        for _ in range(rng.choice((0, 0, 1, 3)))
    ]
    body = bytes([rng.choice((0, 0, 0, 0x7F, 0xFF))]) + zigzag(rng.randrange(-5, 1000)) + zigzag(offset_delta)
    body += varbytes(key) + varbytes(value) + zigzag(len(headers))
    body += b"".join(varbytes(k) + varbytes(v) for k, v in headers)
    return zigzag(len(body)) + body


def control_record(rng: random.Random) -> bytes:
    type_id = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, -1))
    key = struct.pack(">hh", rng.choice((0, 0, 1, -1)), type_id)
    if type_id in (0, 1):
        value = struct.pack(">hi", 0, rng.randrange(0, 100))
    else:
        value = struct.pack(">h", rng.choice((0, 0, 1, 2, 99, -1))) + rng.randbytes(rng.randrange(0, 30))
    body = b"\0" + zigzag(0) + zigzag(0) + varbytes(key) + varbytes(value) + zigzag(0)
    return zigzag(len(body)) + body


def v2_batch(
    records: bytes,
    count: int,
    codec: int = NONE,
    *,
    control: bool = False,
    transactional: bool = False,
    base_offset: int = 0,
    good_crc: bool = True,
    log_append_time: bool = False,
    compressed: bytes | None = None,
) -> bytes:
    """A magic 2 batch around ``records`` (already encoded), compressed with ``codec``."""
    payload = compressed if compressed is not None else compress(codec, records)
    attributes = codec | (0x08 if log_append_time else 0) | (0x10 if transactional else 0) | (0x20 if control else 0)
    length = _V2_HEADER.size - 12 + len(payload)
    after_crc = (
        _V2_HEADER.pack(
            base_offset,
            length,
            0,
            2,
            0,
            attributes,
            max(count - 1, 0),
            1_700_000_000_000,
            1_700_000_000_000,
            7,
            0,
            0,
            count,
        )[21:]
        + payload
    )
    crc = crc32c.crc32c(after_crc) if good_crc else 0xDEADBEEF
    return struct.pack(">qiib", base_offset, length, 0, 2) + struct.pack(">I", crc) + after_crc


def random_v2_batch(rng: random.Random) -> bytes:
    control = rng.random() < 0.1
    count = rng.randrange(0, 6)
    records = b"".join(control_record(rng) if control else record(rng, i) for i in range(count))
    declared = count if rng.random() < 0.8 else rng.choice((0, count + 1, -1, 0x7FFFFFFF))
    return v2_batch(
        records,
        declared,
        rng.choice(CODECS),
        control=control,
        transactional=rng.random() < 0.2,
        base_offset=rng.choice((0, 0, 5, 2**62)),
        good_crc=rng.random() < 0.9,
        log_append_time=rng.random() < 0.1,
    )


# -- legacy message sets -------------------------------------------------------------------


def legacy_message(
    magic: int, key: bytes | None, value: bytes | None, codec: int = NONE, offset: int = 0, good_crc: bool = True
) -> bytes:
    def sized(data):
        return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data

    body = struct.pack(">bb", magic, codec) + (struct.pack(">q", 1_700_000_000_000) if magic == 1 else b"")
    body += sized(key) + sized(value)
    crc = zlib.crc32(body) if good_crc else 0xDEADBEEF
    message = struct.pack(">I", crc) + body
    return struct.pack(">qi", offset, len(message)) + message


def random_legacy_set(rng: random.Random) -> bytes:
    magic = rng.choice((0, 1))
    inner = b"".join(
        legacy_message(magic, rng.randbytes(3), rng.randbytes(rng.randrange(0, 30)), offset=i)
        for i in range(rng.randrange(1, 4))
    )
    codec = rng.choice(CODECS)
    if codec == NONE:
        return inner
    return legacy_message(
        magic, None, compress(codec, inner, rng), codec, offset=rng.choice((0, 2)), good_crc=rng.random() < 0.9
    )


def nested_legacy(depth: int, codec: int = GZIP) -> bytes:
    """A wrapper whose value is a wrapper whose value is ... (Kafka forbids it; a reader must not recurse)."""
    message = legacy_message(1, b"k", b"v")
    for _ in range(depth):
        message = legacy_message(1, None, compress(codec, message), codec)
    return message


def random_records(rng: random.Random) -> bytes:
    """A records field of 0-3 batches or message sets, now and then cut short."""
    parts = [
        random_v2_batch(rng) if rng.random() < 0.75 else random_legacy_set(rng) for _ in range(rng.randrange(0, 4))
    ]
    data = b"".join(parts)
    if data and rng.random() < 0.1:
        data = data[: rng.randrange(len(data))]
    return data


# -- bombs ---------------------------------------------------------------------------------

BOMB_PATTERNS = ("zeros", "records")


def _pattern_chunk(pattern: str, size: int) -> bytes:
    if pattern == "zeros":
        return bytes(size)
    return (MINIMAL_RECORD * (size // len(MINIMAL_RECORD) + 1))[: size - size % len(MINIMAL_RECORD)]


@cache
def bomb(codec: int, pattern: str, inflated: int) -> bytes:
    """A payload of ``codec`` that inflates to about ``inflated`` bytes of ``pattern``."""
    chunk = _pattern_chunk(pattern, 1 << 20 if codec != LZ4 else 4 << 20)
    rounds = max(1, inflated // len(chunk))
    if codec == GZIP:
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join([z.compress(chunk) for _ in range(rounds)] + [z.flush()])
    if codec == ZSTD:
        z = zstandard.ZstdCompressor(level=3).compressobj()
        return b"".join([z.compress(chunk) for _ in range(rounds)] + [z.flush()])
    if codec == LZ4:
        frame = lz4_frame(chunk, block_code=7)
        header, blocks = frame[:7], frame[7:-4]
        return header + blocks * rounds + b"\0\0\0\0"
    if codec == SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(chunk[: 1 << 16]))
        one = struct.pack(">i", len(block)) + block
        return _XERIAL + one * max(1, inflated >> 16)
    raise ValueError(codec)


def bomb_batch(codec: int, pattern: str, inflated: int, magic: int = 2) -> bytes:
    payload = bomb(codec, pattern, inflated)
    if magic == 2:
        count = inflated // len(MINIMAL_RECORD) if pattern == "records" else 1
        return v2_batch(b"", min(count, 0x7FFFFFFF), codec, compressed=payload)
    return legacy_message(magic, None, payload, codec)
