"""Frames real peers and attackers send: nulls the spec forbids, decompression bombs, deep nesting.

- A count of -1 for a non-nullable array (librdkafka's mock broker in OffsetFetch), or a length
  of -1 for a non-nullable string or bytes (its SyncGroup), is read as null when decoding
  leniently, with the deviation said; strict decoding still refuses it.
- All ``records`` fields of one frame share one decompression budget: a Produce request whose
  partitions each carry a batch that compresses very well stops at the budget, says so, and
  never allocates much past it.
- Requests nested in EnvelopeRequests hundreds deep are a DecodeError, never a RecursionError.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest
import zstandard

from kafka_protocol_source import read_capture
from kafka_protocol_source.codec.decoder import MAX_NESTING, Decoder, decoder_for
from kafka_protocol_source.codec.errors import DecodeError
from kafka_protocol_source.spec.registry import registry_for
from tests.framing.kafkaflow import Conversation, string
from tests.records.records_builders import raw_record, raw_v2_batch

ZSTD = 4
MiB = 1 << 20


def offset_fetch_v1_response_with_null_topics(correlation_id: int) -> bytes:
    return struct.pack(">i", correlation_id) + struct.pack(">i", -1)  # topics: -1, not nullable in v1


def offset_fetch_v1_request(correlation_id: int) -> bytes:
    body = string("group") + struct.pack(">i", 1) + string("orders") + struct.pack(">ii", 1, 0)
    return struct.pack(">hhi", 9, 1, correlation_id) + string("rdkafka") + body


def test_a_null_where_the_spec_has_none_is_read_as_null_when_lenient_and_said():
    frame = offset_fetch_v1_response_with_null_topics(7)
    with pytest.raises(DecodeError, match="null where not nullable"):
        decoder_for().decode_response(frame, 9, 1)
    decoded = decoder_for().decode_response(frame, 9, 1, lenient=True)
    assert decoded["body"] == {"topics": None}
    assert decoded["deviations"] and "topics" in decoded["deviations"][0]


def test_a_null_string_or_bytes_where_the_spec_has_none_is_read_as_null_too():
    """librdkafka's mock cluster answers a follower's SyncGroup v3 with error 42 and a null
    assignment (bytes, not nullable). Only a null array was read leniently: the body was not
    read, so the error code was not either (found by review: rev22 L2)."""
    frame = struct.pack(">iihi", 7, 0, 42, -1)  # correlation id, throttle, INVALID_REQUEST, assignment -1
    with pytest.raises(DecodeError, match="null where not nullable"):
        decoder_for().decode_response(frame, 14, 3)
    decoded = decoder_for().decode_response(frame, 14, 3, lenient=True)
    assert decoded["body"] == {"throttle_time_ms": 0, "error_code": 42, "assignment": None}
    assert decoded["deviations"] and "assignment" in decoded["deviations"][0]


def test_in_a_capture_the_exchange_keeps_the_body_and_says_what_deviated(tmp_path):
    c = Conversation()
    c.request(offset_fetch_v1_request(7))
    c.response(offset_fetch_v1_response_with_null_topics(7))
    path = tmp_path / "mock.pcap"
    path.write_bytes(c.pcap())
    [row] = read_capture(path)
    assert row.status == "malformed" and row.api_name == "OffsetFetch"
    assert row.response == {"topics": None} and row.request["group_id"] == "group"
    assert "null where not nullable" in row.error and "body as decoded is kept" in row.error


def _bomb_batch(size: int) -> bytes:
    records = raw_record(None, bytes(size))
    compressed = zstandard.ZstdCompressor().compress(records)
    return raw_v2_batch(compressed, 1, attributes=ZSTD)


def produce_v3_with_partitions(batches: list[bytes]) -> bytes:
    partitions = b"".join(struct.pack(">i", i) + struct.pack(">i", len(b)) + b for i, b in enumerate(batches))
    body = (
        string(None)
        + struct.pack(">hi", 1, 1000)
        + struct.pack(">i", 1)
        + string("bombs")
        + struct.pack(">i", len(batches))
        + partitions
    )
    return struct.pack(">hhi", 0, 3, 1) + string("bomber") + body


def test_one_budget_for_all_records_fields_of_a_frame():
    frame = produce_v3_with_partitions([_bomb_batch(24 * MiB) for _ in range(8)])
    assert len(frame) < 100_000  # 8 x 24 MiB of records in under 100 kB
    tracemalloc.start()
    try:
        decoded = decoder_for().decode_request(frame, max_decompressed_bytes=64 * MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    partitions = decoded["body"]["topic_data"][0]["partition_data"]
    whole = [p for p in partitions if p["records"][0]["records"]]
    assert len(whole) == 2  # 2 x 24 MiB fit in 64 MiB; the third would pass it
    errors = [p["records"][0]["error"] for p in partitions[2:]]
    assert "stopped at the frame's budget" in errors[0]
    assert all("budget" in e and "not decompressed" in e for e in errors[1:])
    assert "maxDecompressedBytes" in decoded["note"]
    assert peak < 64 * MiB + 40 * MiB  # never much past the budget (one codec step, one record copy)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def envelope(inner: bytes, correlation_id: int = 5) -> bytes:
    """EnvelopeRequest v0 (flexible: header v2, compact bytes) around ``inner``."""
    return (
        struct.pack(">hhi", 58, 0, correlation_id)
        + string("broker")
        + b"\x00"
        + _uvarint(len(inner) + 1)
        + inner
        + b"\x00"
        + _uvarint(5)
        + b"\x7f\x00\x00\x01"
        + b"\x00"
    )


@pytest.mark.parametrize("depth", [220, 1000])
def test_requests_nested_hundreds_deep_are_a_decode_error(depth):
    frame = struct.pack(">hhi", 3, 1, 77) + string("inner") + struct.pack(">i", -1)
    for _ in range(depth):
        frame = envelope(frame)
    cold = Decoder(registry_for(None))  # nothing resolved or compiled yet, as in a new process
    decoded = cold.decode_request(frame)
    level, deepest = decoded, 0
    while "request_data_decoded" in level["body"]:
        level, deepest = level["body"]["request_data_decoded"], deepest + 1
    assert "nested more than" in level["body"]["request_data_error"]
    assert deepest < 20


@pytest.mark.parametrize("envelopes", [MAX_NESTING - 1, MAX_NESTING])
def test_a_frame_and_the_requests_inside_it_are_at_most_max_nesting(envelopes):
    frame = struct.pack(">hhi", 3, 1, 77) + string("inner") + struct.pack(">i", -1)
    for _ in range(envelopes):
        frame = envelope(frame)
    level, inside = decoder_for().decode_request(frame), 0
    while "request_data_decoded" in level["body"]:
        level, inside = level["body"]["request_data_decoded"], inside + 1
    if envelopes < MAX_NESTING:  # MAX_NESTING frames: all decode, down to the Metadata request
        assert (inside, level["api_key"]) == (envelopes, 3)
    else:  # one more: the innermost envelope's request is the error
        assert inside == MAX_NESTING - 1
        assert "nested more than" in level["body"]["request_data_error"]


def test_a_batch_of_millions_of_tiny_records_stops_at_the_record_allowance():
    tiny = raw_record(None, None)  # 7 bytes: the smallest record there is
    count = (64 * MiB) // len(tiny)  # nine million records from a few hundred kB of zstd
    batch = raw_v2_batch(zstandard.ZstdCompressor().compress(tiny * count), count, attributes=ZSTD)
    frame = produce_v3_with_partitions([batch])
    tracemalloc.start()
    try:
        decoded = decoder_for().decode_request(frame, max_decompressed_bytes=128 * MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [decoded_batch] = decoded["body"]["topic_data"][0]["partition_data"][0]["records"]
    assert "the record budget of maxDecompressedBytes" in decoded_batch["error"]
    assert 0 < len(decoded_batch["records"]) <= 128 * MiB // 1024
    assert "maxDecompressedBytes" in decoded["note"]
    assert peak < 256 * MiB
