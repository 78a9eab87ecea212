"""Differential tests: our decoder against kafka-python's reader on kafka-python's bytes."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source.records import decode_records
from kafka_protocol_source.records.shapes import BATCH_KEYS, RECORD_KEYS
from tests.records.records_builders import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    build_set,
    install_xxhash_shim,
    oracle_records,
    our_records,
    raw_record,
    raw_v2_batch,
)

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
COMBINATIONS = [(magic, codec) for magic in (0, 1, 2) for codec in CODEC_NAMES if not (codec == ZSTD and magic < 2)]

payloads = st.one_of(
    st.none(),
    st.just(b""),
    st.binary(max_size=64),
    st.binary(min_size=1000, max_size=5000),
    # Repetitive values compress well, so the codec path (not the fallback) is taken.
    st.binary(min_size=1, max_size=8).map(lambda b: b * 700),
)
headers = st.lists(st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=24))), max_size=3)
timestamps = st.integers(min_value=0, max_value=2**41)
entries = st.lists(st.tuples(timestamps, payloads, payloads, headers), min_size=1, max_size=12)


@pytest.fixture(autouse=True)
def _xxhash(monkeypatch):
    install_xxhash_shim(monkeypatch)


@pytest.mark.parametrize(("magic", "codec"), COMBINATIONS)
# Large values are the point here, so the size and speed health checks do not apply.
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(entries=entries, base_offset=st.integers(min_value=0, max_value=2**40))
def test_matches_kafka_python(magic, codec, entries, base_offset):
    if magic == 2:
        # kafka-python writes v2 offsets as deltas from base 0 (int32); a broker sets the
        # base offset, which lies outside the CRC, so stamp it on afterwards.
        buf = base_offset.to_bytes(8, "big") + build_set(magic, codec, entries)[8:]
    else:
        buf = build_set(magic, codec, entries, base_offset=base_offset)

    batches = decode_records(buf)

    assert our_records(batches) == oracle_records(buf)
    expected_values = [(key, value) for _, key, value, _ in entries]
    assert [(r[2], r[3]) for r in our_records(batches)] == expected_values
    assert [r[0] for r in our_records(batches)] == list(range(base_offset, base_offset + len(entries)))
    for batch in batches:
        assert tuple(batch) == BATCH_KEYS
        assert batch["error"] is None
        assert batch["crc_valid"] is True
        assert batch["truncated"] is False
        assert batch["magic"] == magic
        for record in batch["records"]:
            assert tuple(record) == RECORD_KEYS
    if magic == 2:
        assert len(batches) == 1
        assert batches[0]["records_count"] == len(entries)
        assert batches[0]["compression"] in (CODEC_NAMES[codec], "none")
        assert batches[0]["max_timestamp"] == max(t for t, *_ in entries)
    elif codec == NONE:
        assert len(batches) == len(entries)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_magic1_wrapper_offset_makes_inner_offsets_absolute(codec):
    entries = [(1000 + i, b"k", b"value-%d" % i * 50, None) for i in range(5)]
    buf = bytearray(build_set(1, codec, entries, base_offset=0))
    # Brokers stamp the wrapper with the last absolute offset; offset is outside the CRC.
    buf[0:8] = (700 + 4).to_bytes(8, "big")

    batches = decode_records(bytes(buf))

    assert len(batches) == 1
    assert batches[0]["compression"] == CODEC_NAMES[codec]
    assert batches[0]["base_offset"] == 704
    assert [r["offset"] for r in batches[0]["records"]] == [700, 701, 702, 703, 704]
    assert [r[0] for r in oracle_records(bytes(buf))] == [700, 701, 702, 703, 704]
    assert batches[0]["records_count"] == 5


def test_magic1_log_append_time_wrapper_timestamp_applies_to_inner_records():
    entries = [(1000 + i, None, b"v" * 100, None) for i in range(3)]
    buf = bytearray(build_set(1, GZIP, entries))
    # Set the LogAppendTime bit and the wrapper timestamp as a broker would, then fix CRC.
    import struct
    import zlib

    buf[17] |= 0x08
    struct.pack_into(">q", buf, 18, 5555)
    struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])))

    [batch] = decode_records(bytes(buf))

    assert batch["timestamp_type"] == "LogAppendTime"
    assert batch["crc_valid"] is True
    assert [r["timestamp"] for r in batch["records"]] == [5555] * 3
    assert [r[1] for r in oracle_records(bytes(buf))] == [5555] * 3


def test_v2_log_append_time_uses_max_timestamp():
    from tests.records.records_builders import build_v2, patch_v2

    buf = build_v2([(100, b"a", b"b", []), (150, b"c", b"d", [])])
    buf = patch_v2(buf, attributes=0x08, max_timestamp=9999)

    [batch] = decode_records(buf)

    assert batch["timestamp_type"] == "LogAppendTime"
    assert [r["timestamp"] for r in batch["records"]] == [9999, 9999]
    assert [r[1] for r in oracle_records(buf)] == [9999, 9999]


def test_memoryview_and_bytearray_inputs_decode_alike():
    buf = build_set(2, GZIP, [(1, b"k", b"v" * 300, [("h", b"x")])])
    expected = decode_records(buf)
    assert decode_records(memoryview(buf)) == expected
    assert decode_records(bytearray(buf)) == expected
    assert isinstance(decode_records(memoryview(buf))[0]["records"][0]["key"], bytes)


def test_producer_fields_and_transactional_flag():
    buf = build_set(
        2, NONE, [(5, b"k", b"v", [])], transactional=True, producer_id=77, producer_epoch=3, base_sequence=12
    )

    [batch] = decode_records(buf)

    assert batch["is_transactional"] is True
    assert batch["is_control"] is False
    assert (batch["producer_id"], batch["producer_epoch"], batch["base_sequence"]) == (77, 3, 12)
    assert batch["attributes"] & 0x10


def test_legacy_batch_fields():
    buf = build_set(1, NONE, [(1234, b"k", b"v", None)], base_offset=9)

    [batch] = decode_records(buf)

    assert batch["timestamp_type"] == "CreateTime"
    assert batch["max_timestamp"] == 1234
    assert batch["partition_leader_epoch"] is None
    assert batch["producer_id"] is None
    assert batch["records"][0]["crc"] == batch["crc"]
    assert batch["records"][0]["crc_valid"] is True
    assert batch["records"][0]["headers"] == []
    [batch0] = decode_records(build_set(0, NONE, [(None, b"k", b"v", None)]))
    assert batch0["timestamp_type"] is None
    assert batch0["records"][0]["timestamp"] is None


# One header is read inline when both its lengths take one varint byte (up to 63); 64 takes
# two bytes and the general header reader. Both sides of that edge, nulls and empties, and
# record lengths and deltas on both sides of the one/two-byte varint edge too.
ONE_HEADER_EDGES = [
    ("", b""),
    ("h", None),
    ("k" * 63, b"v" * 63),
    ("k" * 64, b"v"),
    ("k", b"v" * 64),
    ("é" * 31, b"\x00" * 63),
    ("é" * 32, b"\xff" * 200),
]


@pytest.mark.parametrize(("header_key", "header_value"), ONE_HEADER_EDGES)
@pytest.mark.parametrize("value_size", [0, 40, 63, 64, 8100])
def test_one_header_records_match_kafka_python(header_key, header_value, value_size):
    entries = [(1_000 + 37 * i, b"key-%d" % i, b"x" * value_size, [(header_key, header_value)]) for i in range(70)]
    buf = build_set(2, NONE, entries)

    assert our_records(decode_records(buf)) == oracle_records(buf)


def test_one_header_key_that_is_not_utf8_is_replaced_as_elsewhere():
    one = raw_record(b"k", b"v", headers=[(b"\xff\xfeh", b"x")])
    two = raw_record(b"k", b"v", offset_delta=1, headers=[(b"\xff\xfeh", b"x"), (b"h", None)])

    (batch,) = decode_records(raw_v2_batch(one + two, 2))

    assert batch["error"] is None
    assert [r["headers"] for r in batch["records"]] == [
        [{"key": "\ufffd\ufffdh", "value": b"x"}],
        [{"key": "\ufffd\ufffdh", "value": b"x"}, {"key": "h", "value": None}],
    ]
