"""Spark types for the record-level kinds krammar spells (varint, varlong, varint-string,
varint-bytes, varint-count arrays, length-field-minus bytes), and decoded values fitting them."""

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from kafka_protocol_source.codec.decoder import Decoder
from kafka_protocol_source.spark.arrow import BatchBuilder
from kafka_protocol_source.spark.schema import typed_body_type
from kafka_protocol_source.spec.registry import SpecRegistry
from kafka_protocol_source.views.variant import to_variant

from ..codec.record_shapes import HEADER_SIZE, RECORD, RECORD_BATCH, build_batch

REGISTRY = SpecRegistry({m.name: m for m in (RECORD_BATCH, RECORD)}, "record shapes")
HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


def test_record_types():
    assert typed_body_type(REGISTRY, "Record", [0]) == StructType(
        [
            StructField("length", IntegerType()),
            StructField("attributes", ByteType()),
            StructField("timestamp_delta", LongType()),
            StructField("offset_delta", IntegerType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("headers", ArrayType(HEADER)),
        ]
    )


def test_record_batch_records_are_binary():
    batch = typed_body_type(REGISTRY, "RecordBatch", [0])
    assert batch["records"].dataType == BinaryType()
    assert batch["producer_epoch"].dataType == ShortType()


def test_decoded_record_fits_its_arrow_and_variant_forms():
    wire = build_batch([(-70_000, None, b"v", [("k\u00e9", None), ("n", b"1")])], 2**40)
    decoder = Decoder(REGISTRY)
    body = decoder.parse_message("Record", 0, wire[HEADER_SIZE:])
    schema = StructType([StructField("body", typed_body_type(REGISTRY, "Record", [0]))])
    rows = BatchBuilder(schema).build([{"body": body}]).to_pylist()
    assert rows[0]["body"] == body
    assert body["headers"] == [{"key": "k\u00e9", "value": None}, {"key": "n", "value": b"1"}]
    assert to_variant(body)[0]
