"""Bad and partial input: reported in the batch dicts, never raised, never over-allocated."""

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source.records import RecordsError, decode_records
from kafka_protocol_source.records.shapes import BATCH_KEYS, RECORD_KEYS
from tests.records.records_builders import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    build_legacy,
    build_set,
    legacy_message,
    patch_v2,
    raw_record,
    raw_v2_batch,
    varint,
)

MAX_INT32 = 2**31 - 1


def mixed_set():
    """Several batches of every format, as a Fetch response could hold them."""
    return b"".join(
        [
            build_set(2, NONE, [(10, b"a", b"1" * 30, [("h", b"x")]), (11, None, b"2", [])]),
            build_set(2, GZIP, [(12, b"b", b"3" * 300, [])]),
            legacy_message(1, 5, b"k", b"v", timestamp=99),
            legacy_message(0, 6, None, b"w"),
            build_set(1, SNAPPY, [(13, b"c", b"4" * 300, None)]),
            build_set(2, ZSTD, [(14, b"d", b"5" * 300, [])]),
        ]
    )


def check_shapes(batches):
    for batch in batches:
        assert tuple(batch) == BATCH_KEYS
        for record in batch["records"]:
            assert tuple(record) == RECORD_KEYS


def assert_cut_is_reported(full_batches, data, cut):
    batches = decode_records(data[:cut])
    check_shapes(batches)
    ends = []
    pos = 0
    for batch in full_batches:
        pos += 12 + batch["batch_length"]
        ends.append(pos)
    whole = sum(1 for end in ends if end <= cut)
    assert batches[:whole] == full_batches[:whole]
    if cut in ends or cut == 0:
        assert len(batches) == whole
    else:
        assert len(batches) == whole + 1
        partial = batches[-1]
        assert partial["truncated"] is True
        assert partial["crc_valid"] is None
        assert partial["error"] is None
        if cut - (ends[whole - 1] if whole else 0) >= 8:
            assert partial["base_offset"] == full_batches[whole]["base_offset"]
        # Whatever records a partial uncompressed batch yields are true prefixes.
        assert partial["records"] == full_batches[whole]["records"][: len(partial["records"])]


def test_every_cut_point_of_a_mixed_set():
    data = mixed_set()
    full = decode_records(data)
    assert len(full) == 6 and all(b["error"] is None and b["crc_valid"] for b in full)
    for cut in range(len(data) + 1):
        assert_cut_is_reported(full, data, cut)


entries = st.lists(
    st.tuples(
        st.integers(0, 2**40),
        st.one_of(st.none(), st.binary(max_size=40)),
        st.one_of(st.none(), st.binary(max_size=40)),
        st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)), max_size=2),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sets=st.lists(
        st.tuples(st.sampled_from([(0, NONE), (1, NONE), (1, GZIP), (2, NONE), (2, LZ4), (2, ZSTD)]), entries),
        min_size=1,
        max_size=3,
    ),
    data=st.data(),
)
def test_any_cut_of_any_set_is_truncated_not_raised(sets, data):
    buf = b"".join(build_set(magic, codec, es) for (magic, codec), es in sets)
    full = decode_records(buf)
    cut = data.draw(st.integers(0, len(buf)), label="cut")
    assert_cut_is_reported(full, buf, cut)


def test_corrupted_crc_is_reported_and_records_still_read():
    good = build_set(2, NONE, [(1, b"k", b"value", [])])
    bad = bytearray(good)
    bad[-2] ^= 0x01  # last value byte; the final byte is the header count
    [batch] = decode_records(bytes(bad))
    assert batch["crc_valid"] is False
    assert batch["error"] is None
    assert batch["records"][0]["value"] == b"valud"
    legacy = bytearray(legacy_message(1, 0, b"k", b"value"))
    legacy[-1] ^= 0x01
    [batch] = decode_records(bytes(legacy))
    assert batch["crc_valid"] is False
    assert batch["records"][0]["crc_valid"] is False
    assert batch["records"][0]["value"] == b"valud"


def test_stored_crc_is_unsigned_as_on_the_wire():
    buf = build_set(2, NONE, [(1, b"k", b"v", [])])
    [batch] = decode_records(buf)
    assert batch["crc"] == struct.unpack_from(">I", buf, 17)[0]
    assert batch["crc"] >= 0


def small_peak(func, limit=256 << 10):
    tracemalloc.start()
    try:
        result = func()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit, f"peak allocation {peak} bytes"
    return result


def test_absurd_record_count():
    buf = patch_v2(build_set(2, NONE, [(1, b"k", b"v", [])]), records_count=MAX_INT32)
    [batch] = small_peak(lambda: decode_records(buf))
    assert batch["records_count"] == MAX_INT32
    assert "record count mismatch" in batch["error"]
    assert len(batch["records"]) == 1


@pytest.mark.parametrize("field", ["key", "header_count"])
def test_absurd_lengths_inside_a_record(field):
    record = raw_record(b"k", b"v", headers=[(b"h", b"x")], **{"key_length" if field == "key" else field: MAX_INT32})
    buf = raw_v2_batch(record, 1)
    [batch] = small_peak(lambda: decode_records(buf))
    assert batch["crc_valid"] is True
    assert str(MAX_INT32) in batch["error"]
    assert batch["records"] == []


def test_absurd_record_length():
    buf = raw_v2_batch(varint(MAX_INT32) + b"\x00" * 20, 1)
    [batch] = small_peak(lambda: decode_records(buf))
    assert f"claims {MAX_INT32} bytes" in batch["error"]


def test_absurd_batch_length_is_a_truncated_batch():
    good = build_set(2, NONE, [(1, b"k", b"v", [])])
    buf = good[:8] + struct.pack(">i", MAX_INT32) + good[12:]
    [batch] = small_peak(lambda: decode_records(buf))
    assert batch["truncated"] is True
    assert batch["batch_length"] == MAX_INT32
    assert batch["records"][0]["key"] == b"k"


@pytest.mark.parametrize("which", ["key", "value"])
def test_absurd_legacy_lengths(which):
    message = bytearray(legacy_message(1, 0, b"k", b"v"))
    key_at = 12 + 4 + 2 + 8
    at = key_at if which == "key" else key_at + 4 + 1
    struct.pack_into(">i", message, at, MAX_INT32)
    [batch] = small_peak(lambda: decode_records(bytes(message)))
    assert f"{which} claims {MAX_INT32} bytes" in batch["error"]
    assert batch["crc_valid"] is False


def test_length_below_minimum_stops_the_walk():
    good = build_set(2, NONE, [(1, b"k", b"v", [])])
    buf = good + good[:8] + struct.pack(">i", 10) + good[12:] + good
    batches = decode_records(buf)
    assert len(batches) == 2
    assert batches[0]["error"] is None
    assert "below the minimum" in batches[1]["error"]


def test_unknown_magic_is_skipped_by_its_length():
    good = build_set(2, NONE, [(1, b"k", b"v", [])])
    odd = bytearray(good)
    odd[16] = 7
    batches = decode_records(bytes(odd) + good)
    assert batches[0]["error"] == "unknown magic 7"
    assert batches[1]["records"][0]["key"] == b"k"


def test_record_count_lower_than_records_present():
    buf = patch_v2(build_set(2, NONE, [(1, b"a", b"1", []), (1, b"b", b"2", [])]), records_count=1)
    [batch] = decode_records(buf)
    assert batch["crc_valid"] is True
    assert "declares 1, found 2" in batch["error"]


def test_record_length_not_matching_content():
    record = bytearray(raw_record(b"k", b"v"))
    record[0] += 2  # claims one more byte than it has (zigzag: +2 is +1)
    buf = raw_v2_batch(bytes(record) + b"\x00", 1)
    [batch] = decode_records(buf)
    assert "does not match its content" in batch["error"]


def test_inner_legacy_message_compressed_twice_is_an_error():
    import gzip

    inner = legacy_message(1, 0, None, gzip.compress(legacy_message(1, 0, b"k", b"v")), attributes=GZIP)
    [batch] = decode_records(legacy_message(1, 0, None, gzip.compress(inner), attributes=GZIP))
    assert "compressed again" in batch["error"]


def test_records_error_is_a_value_error():
    assert issubclass(RecordsError, ValueError)


def test_empty_input():
    assert decode_records(b"") == []


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_never_raises(data):
    check_shapes(decode_records(data))


@settings(max_examples=300, deadline=None)
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4), data=st.data())
def test_corrupted_valid_sets_never_raise(flips, data):
    base = data.draw(st.sampled_from(MUTATION_BASES), label="base")
    buf = bytearray(base)
    for at, mask in flips:
        buf[at % len(buf)] ^= mask
    batches = decode_records(bytes(buf), max_decompressed_bytes=1 << 20)
    check_shapes(batches)


MUTATION_BASES = [mixed_set()] + [
    build_set(magic, codec, [(5, b"key", b"value" * 20, [("h", b"v")] if magic == 2 else None), (6, None, None, [])])
    for magic, codec in [(0, GZIP), (1, SNAPPY), (2, GZIP), (2, SNAPPY), (2, LZ4), (2, ZSTD)]
]


def test_records_past_the_record_budget_say_which_budget_and_how_to_raise_it():
    """A frame of more small records than the record budget lets through (one per 1 KiB of
    maxDecompressedBytes, at least 65,536) keeps the first ones, and says it was the count, not
    the bytes, that stopped it: the bytes decompressed were far below maxDecompressedBytes."""
    from kafka_protocol_source.records.budget import MIN_RECORDS, DecompressionBudget

    n = MIN_RECORDS + 10
    records = b"".join(raw_record(b"", b"v", offset_delta=i) for i in range(n))
    budget = DecompressionBudget(1 << 20)
    (batch,) = decode_records(raw_v2_batch(records, n, last_offset_delta=n - 1), budget=budget)
    assert len(batch["records"]) == MIN_RECORDS
    assert budget.records_cut and f"records past the frame's first {MIN_RECORDS} not decoded" in batch["error"]
    assert "raise it" in budget.note() and "decompressed" not in budget.note()


def test_a_legacy_wrapper_of_more_messages_than_the_record_budget_says_so_too():
    """A gzip wrapper message (magic 1) holding more inner messages than the record budget lets
    through: the first ones are kept, and the batch and the budget say it was the record count."""
    from kafka_protocol_source.records.budget import MIN_RECORDS, DecompressionBudget

    n = MIN_RECORDS + 10
    wrapper = build_legacy(1, GZIP, [(0, None, b"v")] * n)
    budget = DecompressionBudget(64 << 20)  # bytes enough: the count stops it
    (batch,) = decode_records(wrapper, budget=budget)
    assert len(batch["records"]) == MIN_RECORDS and budget.records_cut
    assert f"records past the frame's first {MIN_RECORDS} not decoded" in batch["error"]
