"""Records that cannot be read are a row of the records view that says why, never nothing.

A batch built by kafka-python's builder (gzip), one byte of its compressed records flipped: before,
its records were left out of the records view in every read mode, without a word (found by review,
/tmp/rev12/repro/repro3_corrupt_compressed_batch_vanishes.py). Now that batch is one row with its
batch columns and ``error``, which PERMISSIVE keeps, DROPMALFORMED drops and FAILFAST fails on.
"""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_protocol_source.records import decode_records
from kafka_protocol_source.spec.api_keys import PRODUCE
from kafka_protocol_source.views.records import by_read_mode, record_rows
from kafka_protocol_source.views.topic_names import TopicNames

from .bare_exchange import bare_exchange

GZIP = 1


def _batch(corrupt: bool) -> bytes:
    builder = DefaultRecordBatchBuilder(2, GZIP, False, 7, 0, 0, 1 << 20)
    for i in range(6):
        builder.append(i, 1_700_000_000_000, None, b"value %d " % i * 20, [])
    data = bytearray(builder.build())
    if corrupt:
        data[-30] ^= 0xFF  # inside the compressed records
    return bytes(data)


def _rows(*batches: bytes) -> list[dict]:
    records = decode_records(b"".join(batches))
    exchange = bare_exchange(
        PRODUCE, 9, {"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}]}, None
    )
    return list(record_rows(exchange, TopicNames()))


def test_a_batch_that_does_not_decompress_is_one_row_that_says_why():
    rows = _rows(_batch(corrupt=False), _batch(corrupt=True))
    assert [r["value"] is not None for r in rows] == [True] * 6 + [False]
    assert all(r["error"] is None for r in rows[:6])
    unread = rows[-1]
    assert unread["error"].startswith("records of this batch could not be read: gzip")
    assert (unread["topic"], unread["partition"], unread["compression"], unread["producer_id"]) == ("t", 0, "gzip", 7)
    assert (unread["key"], unread["offset"], unread["timestamp"], unread["headers"]) == (None, None, None, None)
    assert unread.keys() == rows[0].keys()


def test_the_read_mode_keeps_drops_or_fails_on_it():
    rows = _rows(_batch(corrupt=False), _batch(corrupt=True))
    assert list(by_read_mode(iter(rows), "PERMISSIVE")) == rows
    assert list(by_read_mode(iter(rows), "DROPMALFORMED")) == rows[:6]
    with pytest.raises(RuntimeError, match=r"FAILFAST.*f\.pcap: connection x, produce of t-0 .*gzip"):
        list(by_read_mode(iter(rows), "FAILFAST"))


def test_a_record_whose_crc_does_not_match_says_so_and_the_mode_acts_on_it():
    """Kafka's consumers refuse such a batch (check.crcs): its records were rows with crc_valid
    false and no error, kept by DROPMALFORMED and FAILFAST alike (found by review, /tmp/ux17/r03)."""
    builder = DefaultRecordBatchBuilder(2, 0, False, 7, 0, 0, 1 << 20)  # uncompressed: it still reads
    builder.append(0, 1_700_000_000_000, None, b"v" * 40, [])
    flipped = bytearray(builder.build())
    flipped[-5] ^= 0x01  # a value byte: the CRC no longer matches
    rows = _rows(_batch(corrupt=False), bytes(flipped))
    assert [r["crc_valid"] for r in rows] == [True] * 6 + [False]
    assert all(r["error"] is None for r in rows[:6])
    assert rows[-1]["error"].startswith("the CRC does not match the bytes it covers: a consumer that checks CRCs")
    assert rows[-1]["value"] is not None  # kept as captured
    assert list(by_read_mode(iter(rows), "DROPMALFORMED")) == rows[:6]
    with pytest.raises(RuntimeError, match=r"FAILFAST.*produce of t-0 .*the CRC does not match"):
        list(by_read_mode(iter(rows), "FAILFAST"))
