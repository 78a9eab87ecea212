"""Typed schemas for every api key and version in the registry: they build, are deterministic, and Spark takes them.

Types only (no Spark job per version): typed_body_type for each message at each version, twice;
the union over all versions through the data source's own schema() for every api; Spark parses
each schema (StructType JSON round trip, Arrow mapping), and a few apis are read for real.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from kafka_protocol_source import decoder_for
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.schema import typed_body_type
from kafka_protocol_source.spark.source import default_schema

from .expected import TANSU_CONFLUENT

REGISTRY = decoder_for(None).registry
API_KEYS = REGISTRY.api_keys()


def test_the_registry_has_every_api():
    assert len(API_KEYS) > 80 and {0, 1, 3, 11, 18} <= set(API_KEYS)


@pytest.mark.parametrize("api_key", API_KEYS, ids=[REGISTRY.api_name(k) for k in API_KEYS])
def test_typed_body_type_builds_for_every_version(api_key):
    request, response = REGISTRY.request(api_key), REGISTRY.response(api_key)
    versions = list(request.valid_versions.versions())
    assert versions
    for v in versions:
        for message in (request, response):
            if v not in message.valid_versions:
                continue
            first = typed_body_type(REGISTRY, message.name, [v])
            again = typed_body_type(REGISTRY, message.name, [v])
            assert isinstance(first, StructType) and first == again, (message.name, v)
            assert first.json() == again.json()
            names = [f.name for f in first.fields]
            assert len(names) == len(set(names)), (message.name, v, names)
    for options in ({"api": str(api_key)}, {"api": str(api_key), "apiVersion": str(versions[-1])}):
        schema = default_schema(ReadOptions.parse({"path": "x", **options}))
        assert schema == default_schema(ReadOptions.parse({"path": "x", **options}))
        assert StructType.fromJson(schema.jsonValue()) == schema
        to_arrow_schema(schema, timezone="UTC")  # what each batch is checked against


def test_spark_parses_every_typed_schema(spark):
    """Spark's own parser takes each api's union schema (one JVM call per api, no job)."""
    for api_key in API_KEYS:
        schema = default_schema(ReadOptions.parse({"path": "x", "api": str(api_key)}))
        parsed = spark._jsparkSession.parseDataType(schema.json())
        assert parsed.json() and StructType.fromJson(json.loads(parsed.json())) == schema, api_key


@pytest.mark.parametrize("api", ["OffsetCommit", "SyncGroup", "DescribeConfigs", "GetTelemetrySubscriptions"])
def test_reading_other_apis_typed(spark, api):
    df = spark.read.format("kafka-wire").option("api", api).load(str(TANSU_CONFLUENT))
    rows = df.select("api_name", "status", "request", "response").collect()
    assert rows and all(r.api_name == api and r.status == "ok" and r.request is not None for r in rows)


def test_the_records_column_has_the_batch_and_record_keys_the_records_stage_gives():
    # One home for the shape of a batch: records/shapes.py. The Spark types must follow it.
    from kafka_protocol_source.records.shapes import BATCH_KEYS, RECORD_KEYS
    from kafka_protocol_source.spark.schema import BATCH_TYPE

    assert tuple(f.name for f in BATCH_TYPE.fields) == BATCH_KEYS
    records = BATCH_TYPE["records"].dataType.elementType
    assert tuple(f.name for f in records.fields) == RECORD_KEYS
