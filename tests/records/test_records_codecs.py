"""Codec framings Kafka clients produce, and decompression bounded by the cap."""

import gzip
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.codec import snappy_encode

from kafka_protocol_source.records import decode_records
from kafka_protocol_source.records.lz4_frame import decompress_lz4_frames, xxh32
from tests.records.records_builders import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    build_legacy,
    build_set,
    build_v2,
    install_xxhash_shim,
    legacy_message,
    oracle_records,
    raw_v2_batch,
)

ENTRIES = [(1_700_000_000_000 + i, b"key-%d" % i, b"value %d " % i * 40, [("h", b"%d" % i)]) for i in range(50)]


def inner_records():
    """The uncompressed records section of a v2 batch with ENTRIES."""
    return build_v2(ENTRIES)[61:]


def compressed_batch(codec, payload):
    first = ENTRIES[0][0]
    return raw_v2_batch(
        payload,
        len(ENTRIES),
        attributes=codec,
        last_offset_delta=len(ENTRIES) - 1,
        base_timestamp=first,
        max_timestamp=ENTRIES[-1][0],
    )


def assert_entries(batch, codec_name):
    assert batch["error"] is None
    assert batch["crc_valid"] is True
    assert batch["compression"] == codec_name
    assert [
        (r["timestamp"], r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]]) for r in batch["records"]
    ] == [tuple(e) for e in ENTRIES]
    assert [r["offset"] for r in batch["records"]] == list(range(len(ENTRIES)))


def test_snappy_xerial_framing():
    payload = snappy_encode(inner_records(), xerial_compatible=True, xerial_blocksize=1024)
    assert payload.startswith(b"\x82SNAPPY\x00")
    [batch] = decode_records(compressed_batch(SNAPPY, payload))
    assert_entries(batch, "snappy")


def test_snappy_raw_framing():
    payload = bytes(cramjam.snappy.compress_raw(inner_records()))
    assert not payload.startswith(b"\x82SNAPPY")
    [batch] = decode_records(compressed_batch(SNAPPY, payload))
    assert_entries(batch, "snappy")


def test_gzip_multiple_members():
    records = inner_records()
    third = len(records) // 3
    payload = b"".join(gzip.compress(records[i:j]) for i, j in ((0, third), (third, 2 * third), (2 * third, None)))
    [batch] = decode_records(compressed_batch(GZIP, payload))
    assert_entries(batch, "gzip")


def test_zstd_stream_without_content_size_and_several_frames():
    records = inner_records()
    frames = []
    for part in (records[:1000], records[1000:]):
        writer = zstandard.ZstdCompressor().compressobj()
        frames.append(writer.compress(part) + writer.flush())
    assert zstandard.get_frame_parameters(frames[0]).content_size == zstandard.CONTENTSIZE_UNKNOWN
    [batch] = decode_records(compressed_batch(ZSTD, b"".join(frames)))
    assert_entries(batch, "zstd")


def test_zstd_decompressor_is_reused_after_corrupt_and_cut_frames_and_per_thread():
    # One decompressor serves every zstd batch of a thread: a frame that failed or was cut
    # short must not leave anything behind for the next one.
    records = inner_records()
    payload = zstandard.ZstdCompressor().compress(records)
    corrupt = payload[:12] + bytes(40) + payload[52:]
    for data in (payload, corrupt, payload[: len(payload) // 2], payload, corrupt, payload):
        [batch] = decode_records(compressed_batch(ZSTD, data))
        if data == payload:
            assert_entries(batch, "zstd")
        else:
            assert batch["error"] and batch["records"] == []
    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(lambda data: decode_records(compressed_batch(ZSTD, data))[0], [payload] * 16))
    for batch in batches:
        assert_entries(batch, "zstd")


@pytest.mark.parametrize("data", [b"", b"a", b"abcd", b"0123456789abcde", bytes(range(16)), bytes(range(100))])
def test_xxh32_matches_lz4_frame_header_checksums(data):
    # Known xxh32 vectors, then the checksum the lz4 library wrote into real frames.
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    frame = lz4.frame.compress(data, content_checksum=True, store_size=True)
    header_end = 6 + (8 if frame[4] & 0x08 else 0)
    assert frame[header_end] == (xxh32(frame[4:header_end]) >> 8) & 0xFF


def old_kafka_lz4(data):
    """An LZ4 frame with the header checksum computed over magic+header, as Kafka < 0.10 did."""
    frame = bytearray(lz4.frame.compress(data, block_linked=False, store_size=False))
    assert not frame[4] & 0x08
    frame[6] = (xxh32(bytes(frame[0:6])) >> 8) & 0xFF
    assert frame[6] != (xxh32(bytes(frame[4:6])) >> 8) & 0xFF, "pick data where both differ"
    return bytes(frame)


def test_lz4_frame_with_old_wrong_header_checksum():
    payload = old_kafka_lz4(inner_records())
    with pytest.raises(RuntimeError):  # what python-lz4 raises on a bad header checksum
        lz4.frame.decompress(payload)
    [batch] = decode_records(compressed_batch(LZ4, payload))
    assert_entries(batch, "lz4")


def test_lz4_magic0_message_from_kafka_python_old_checksum(monkeypatch):
    install_xxhash_shim(monkeypatch)
    entries = [(None, b"k%d" % i, b"v" * 200) for i in range(5)]
    buf = build_legacy(0, LZ4, entries)

    [batch] = decode_records(buf)

    assert batch["error"] is None
    assert batch["compression"] == "lz4"
    assert [(r["offset"], r["key"], r["value"]) for r in batch["records"]] == [
        (o, k, v) for o, _, k, v, _ in oracle_records(buf)
    ]
    assert [r["key"] for r in batch["records"]] == [b"k%d" % i for i in range(5)]


@pytest.mark.parametrize(
    "options",
    [
        dict(block_linked=True),
        dict(block_checksum=True),
        dict(content_checksum=True, store_size=True),
        dict(block_size=lz4.frame.BLOCKSIZE_MAX4MB),
    ],
)
def test_lz4_frame_options(options):
    payload = lz4.frame.compress(inner_records(), **options)
    [batch] = decode_records(compressed_batch(LZ4, payload))
    assert_entries(batch, "lz4")


def test_lz4_linked_blocks_spanning_several_blocks():
    entries = [(1, None, bytes([i % 7]) * 5000 + b"%d" % i, []) for i in range(40)]
    records = build_v2(entries)[61:]
    payload = lz4.frame.compress(records, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    [batch] = decode_records(raw_v2_batch(payload, len(entries), attributes=LZ4, last_offset_delta=len(entries) - 1))
    assert batch["error"] is None
    assert [r["value"] for r in batch["records"]] == [e[2] for e in entries]


def test_unknown_codec_is_a_batch_error():
    buf = raw_v2_batch(b"\x00" * 10, 1, attributes=5)
    [batch] = decode_records(buf)
    assert batch["compression"] == "unknown(5)"
    assert "unsupported compression codec 5" in batch["error"]
    assert batch["records"] == []


def peak_allocation(func):
    tracemalloc.start()
    try:
        result = func()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


BOMB_SIZE = 64 << 20
CAP = 1 << 20


def bomb(codec):
    zeros = bytes(BOMB_SIZE)
    if codec == GZIP:
        return gzip.compress(zeros)
    if codec == SNAPPY:
        return bytes(cramjam.snappy.compress_raw(zeros))
    if codec == LZ4:
        return lz4.frame.compress(zeros, block_linked=False)
    writer = zstandard.ZstdCompressor().compressobj()
    return writer.compress(zeros) + writer.flush()


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_decompression_bomb_above_cap_is_an_error_without_inflating(codec):
    buf = raw_v2_batch(bomb(codec), 1, attributes=codec)
    assert len(buf) < BOMB_SIZE // 20

    [batch], peak = peak_allocation(lambda: decode_records(buf, max_decompressed_bytes=CAP))

    assert batch["error"] is not None and "exceeds" in batch["error"]
    assert batch["records"] == []
    assert peak < 8 * CAP + 2 * len(buf)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_output_just_under_the_cap_is_fine(codec):
    records = inner_records()
    payload = {
        GZIP: gzip.compress,
        SNAPPY: lambda d: bytes(cramjam.snappy.compress_raw(d)),
        LZ4: lz4.frame.compress,
        ZSTD: zstandard.ZstdCompressor().compress,
    }[codec](records)
    [batch] = decode_records(compressed_batch(codec, payload), max_decompressed_bytes=len(records))
    assert batch["error"] is None
    [batch] = decode_records(compressed_batch(codec, payload), max_decompressed_bytes=len(records) - 1)
    assert "exceeds" in batch["error"]


def test_legacy_wrapper_bomb_is_an_error():
    inner = gzip.compress(bytes(BOMB_SIZE))
    buf = legacy_message(1, 0, None, inner, attributes=GZIP)
    [batch] = decode_records(buf, max_decompressed_bytes=CAP)
    assert "exceeds" in batch["error"]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
@settings(max_examples=60, deadline=None)
@given(junk=st.binary(max_size=200))
def test_corrupt_compressed_payload_is_an_error_never_an_exception(codec, junk):
    good = {
        GZIP: gzip.compress,
        SNAPPY: snappy_encode,
        LZ4: lz4.frame.compress,
        ZSTD: zstandard.ZstdCompressor().compress,
    }[codec](b"x" * 300)
    for payload in (junk, good[: len(good) // 2], good[:8] + junk):
        [batch] = decode_records(raw_v2_batch(payload, 3, attributes=codec))
        assert batch["error"] is not None
        assert batch["crc_valid"] is True


def test_snappy_claimed_length_beyond_cap_is_rejected_before_allocation():
    # Raw snappy starts with the uncompressed length as a varint: claim 2 GiB in 7 bytes.
    payload = bytes([0x80, 0x80, 0x80, 0x80, 0x08]) + b"\x00\x00"
    [batch], peak = peak_allocation(lambda: decode_records(raw_v2_batch(payload, 1, attributes=2)))
    assert "snappy" in batch["error"]
    assert peak < 1 << 20


def test_gzip_trailing_garbage_after_member_is_ignored_like_java():
    payload = gzip.compress(inner_records()) + b"\x00\x00garbage"
    [batch] = decode_records(compressed_batch(GZIP, payload))
    assert_entries(batch, "gzip")


def test_none_codec_on_kafka_python_incompressible_batch():
    # kafka-python falls back to no compression when it does not pay; the batch says so.
    buf = build_set(2, GZIP, [(1, None, b"\x01", [])])
    [batch] = decode_records(buf)
    assert batch["compression"] == "none"
    assert batch["records"][0]["value"] == b"\x01"


# Item 8 of issue 11: cramjam's block decoder, given no output length, takes a block whose first
# bytes read as a small little-endian size for a size-prefixed one. Blocks of all-zero content
# compress to exactly such bytes (1f 00 01 00: one literal zero, then a match at offset 1).
LARGE_BLOCK_SIZES = [lz4.frame.BLOCKSIZE_MAX256KB, lz4.frame.BLOCKSIZE_MAX1MB, lz4.frame.BLOCKSIZE_MAX4MB]


@pytest.mark.parametrize("block_size", LARGE_BLOCK_SIZES)
@pytest.mark.parametrize("block_linked", [False, True])
@pytest.mark.parametrize(
    "value",
    [bytes(1 << 20), bytes(4 << 20), b"\x00" * 9 + b"ab" * (1 << 19)],
    ids=["zeros-1MiB", "zeros-4MiB", "zero-led-1MiB"],
)
@pytest.mark.parametrize("tail", [[], [(8, b"k", b"\x00" * 40, [])]], ids=["one-record", "two-records"])
def test_lz4_large_blocks_whose_content_begins_with_zero_bytes(block_size, block_linked, value, tail):
    # With one record the last block holds the value's last zeros and the empty header count.
    entries = [(7, None, value, []), *tail]
    records = build_v2(entries)[61:]
    payload = lz4.frame.compress(records, block_size=block_size, block_linked=block_linked)
    [batch] = decode_records(raw_v2_batch(payload, len(entries), attributes=LZ4, last_offset_delta=len(entries) - 1))
    assert batch["error"] is None
    assert [(r["offset"], r["key"], r["value"]) for r in batch["records"]] == [
        (i, e[1], e[2]) for i, e in enumerate(entries)
    ]


@pytest.mark.parametrize("spill", [20, 30, 100])
def test_lz4_magic1_wrapper_with_4mib_blocks(spill):
    # The inner set is 4 MiB and `spill` bytes: a second block of nothing but value zeros.
    values = [b"v" * 10, bytes((4 << 20) - 2 * 34 - 10 + spill)]
    inner = b"".join(legacy_message(1, i, None, v, timestamp=5) for i, v in enumerate(values))
    assert len(inner) == (4 << 20) + spill
    payload = lz4.frame.compress(inner, block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=False)
    [batch] = decode_records(legacy_message(1, 1, None, payload, attributes=LZ4, timestamp=5))
    assert batch["error"] is None
    assert [(r["offset"], r["value"]) for r in batch["records"]] == list(enumerate(values))


def test_lz4_frames_of_every_block_size_in_turn_share_one_scratch_buffer_safely():
    # One scratch buffer per thread serves every frame: a frame after a larger one (a buffer
    # bigger than its blocks) and after a smaller one (the buffer grows) decodes the same.
    data = bytes(range(256)) * 2000 + b"tail"
    sizes = (
        lz4.frame.BLOCKSIZE_MAX4MB,
        lz4.frame.BLOCKSIZE_MAX64KB,
        lz4.frame.BLOCKSIZE_MAX1MB,
        lz4.frame.BLOCKSIZE_MAX256KB,
        lz4.frame.BLOCKSIZE_MAX4MB,
    )
    for size in sizes:
        frame = lz4.frame.compress(data, block_size=size, block_linked=False)
        assert decompress_lz4_frames(frame, 1 << 30) == data
