"""krammar's record-level types end to end: franz-go's RecordBatch and Record, written in krammar,
lower to exactly the IR the codec tests decode kafka-python's batches with, and decode the same."""

from __future__ import annotations

from kafka_protocol_source.codec.decoder import Decoder
from kafka_protocol_source.spec.krammar import lower_document, parse_krammar
from kafka_protocol_source.spec.registry import SpecRegistry

from ...codec.record_shapes import HEADER_SIZE, RECORD, RECORD_BATCH, build_batch
from .seed_examples import LENGTH_FIELD_MINUS

RECORDS = (
    LENGTH_FIELD_MINUS.replace("not top level, no encoding", "not top level, data, max version 0")
    + """
Record => not top level, data, max version 0
  Length: varint
  Attributes: int8
  TimestampDelta: varlong
  OffsetDelta: varint
  Key: varint-bytes
  Value: varint-bytes
  Headers: varint[=>]Header
    Key: varint-string
    Value: varint-bytes
"""
)


def test_krammar_record_shapes_lower_to_the_hand_built_ir():
    messages = lower_document(parse_krammar(RECORDS))
    assert messages == {"RecordBatch": RECORD_BATCH, "Record": RECORD}


def test_a_kafka_python_batch_decodes_through_the_krammar_definitions():
    wire = build_batch(
        [(0, b"k", b"v" * 30, [("trace", b"abc"), ("empty", None)]), (7, None, None, [])], 1_700_000_000_000
    )
    decoder = Decoder(SpecRegistry(lower_document(parse_krammar(RECORDS)), "krammar"))
    batch = decoder.parse_message("RecordBatch", 0, wire)
    assert batch["num_records"] == 2 and batch["records"] == wire[HEADER_SIZE:]
    first_length = batch["records"][0] // 2  # zigzag of a positive varint below 64: one byte
    first = decoder.parse_message("Record", 0, batch["records"][: 1 + first_length])
    assert (first["key"], first["value"], first["offset_delta"]) == (b"k", b"v" * 30, 0)
    assert first["headers"] == [{"key": "trace", "value": b"abc"}, {"key": "empty", "value": None}]
