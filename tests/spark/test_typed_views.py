"""Typed views (``.option("api", ...)``): the structs hold what read_capture decoded, field for field.

Each api is read once and every row's request and response are compared with the decoded dicts
in full (a field the row's version lacks must be null), then a few nested fields are named
explicitly, so a failure says which value went wrong. ``apiVersion`` narrows the schema to that
version's fields exactly.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import ArrayType, StructType

from kafka_protocol_source import decoder_for
from kafka_protocol_source.spark.schema import typed_body_type

from .expected import MOCK_AIOKAFKA, MOCK_CONFLUENT, TANSU_CONFLUENT, by_exchange, exchanges


def assert_body_equal(actual, decoded, path="body"):
    """``actual`` (a typed struct's Row) holds exactly the decoded values."""
    if hasattr(actual, "asDict"):
        actual = actual.asDict(recursive=True)
    if decoded is None:
        assert actual is None, f"{path}: {actual!r}, but nothing was decoded"
    elif isinstance(decoded, dict):
        assert isinstance(actual, dict), f"{path}: {actual!r} is not a struct"
        for key, value in decoded.items():
            assert key in actual, f"{path}.{key} is missing from the Spark schema"
            assert_body_equal(actual[key], value, f"{path}.{key}")
        for key, value in actual.items():
            if key not in decoded and key != "unknown_tagged_fields":
                assert value is None, f"{path}.{key} = {value!r}, but the decoded body has no such field"
    elif isinstance(decoded, list):
        assert isinstance(actual, list) and len(actual) == len(decoded), f"{path}: {actual!r} != {decoded!r}"
        for i, (a, d) in enumerate(zip(actual, decoded, strict=True)):
            assert_body_equal(a, d, f"{path}[{i}]")
    elif isinstance(decoded, (bytes, bytearray)):
        assert actual is not None and bytes(actual) == bytes(decoded), f"{path}: {actual!r} != {decoded!r}"
    else:
        assert actual == decoded, f"{path}: {actual!r} != {decoded!r}"


def typed_rows(spark, path, api, **options):
    df = spark.read.format("kafka-wire").option("api", api).options(**options).load(str(path))
    rows = df.select("connection_id", "correlation_id", "api_name", "request", "response").collect()
    return df, rows


CASES = [  # (api, capture): versions differ between the two clients
    ("Produce", TANSU_CONFLUENT),
    ("Produce", MOCK_AIOKAFKA),
    ("Fetch", TANSU_CONFLUENT),
    ("Fetch", MOCK_AIOKAFKA),
    ("Metadata", TANSU_CONFLUENT),
    ("JoinGroup", MOCK_AIOKAFKA),
    ("ApiVersions", TANSU_CONFLUENT),
    ("ApiVersions", MOCK_AIOKAFKA),
]


@pytest.mark.parametrize(("api", "path"), CASES, ids=[f"{a}-{p.stem}" for a, p in CASES])
def test_typed_values_equal_decoded_dicts(spark, api, path):
    _, rows = typed_rows(spark, path, api)
    expected = {k: e for k, e in by_exchange(path).items() if e.api_name == api}
    assert expected and len(rows) == len(expected)
    for row in rows:
        assert row.api_name == api
        e = expected[row.connection_id, row.correlation_id]
        assert_body_equal(row.request, e.request, f"{api} request")
        assert_body_equal(row.response, e.response, f"{api} response")
    named = NAMED_FIELDS[api]
    for row in rows:
        e = expected[row.connection_id, row.correlation_id]
        for extract in named:
            if e.response is None and "response" in extract.__doc__:
                continue
            assert extract(row) == extract(e), (api, extract.__doc__)


def _records(batches):
    return [
        (bytes(r.key) if r.key is not None else None, bytes(r.value) if r.value is not None else None)
        for b in batches or []
        for r in b.records
    ]


class _Obj:
    """Attribute access over decoded dicts, so one lambda reads a Row and a dict alike."""

    def __init__(self, d):
        self._d = d

    def __getattr__(self, name):
        v = self._d[name]
        if isinstance(v, dict):
            return _Obj(v)
        if isinstance(v, list):
            return [_Obj(x) if isinstance(x, dict) else x for x in v]
        return v


def _wrap(fn):
    def call(x):
        if hasattr(x, "__fields__"):
            return fn(x.request, x.response)
        return fn(_Obj(x.request), _Obj(x.response))

    call.__doc__ = fn.__doc__
    return call


def _produce_name(q, _):
    """request.topic_data[0].name"""
    return q.topic_data[0].name


def _produce_records(q, _):
    """keys and values of the records in request.topic_data[0].partition_data[0].records"""
    return _records(q.topic_data[0].partition_data[0].records)


def _produce_offset(_, r):
    """response.responses[0].partition_responses[0].base_offset"""
    return r.responses[0].partition_responses[0].base_offset


def _fetch_records(_, r):
    """response: keys and values of every fetched record"""
    return [rec for t in r.responses for p in t.partitions for rec in _records(p.records)]


def _fetch_offsets(q, _):
    """request.topics[*].partitions[*].fetch_offset"""
    return [p.fetch_offset for t in q.topics for p in t.partitions]


def _metadata_brokers(_, r):
    """response.brokers (node_id, host, port)"""
    return [(b.node_id, b.host, b.port) for b in r.brokers]


def _metadata_topics(_, r):
    """response.topics[*].name and partition count"""
    return [(t.name, len(t.partitions)) for t in r.topics]


def _join_group(q, r):
    """request group_id and protocol names, response leader and generation"""
    return q.group_id, [p.name for p in q.protocols], r.leader, r.generation_id


def _join_group_subscription(q, _):
    """request.protocols[*].metadata_decoded.topics"""
    return [p.metadata_decoded.topics for p in q.protocols]


def _api_keys(_, r):
    """response.api_keys (api_key, min_version, max_version)"""
    return [(k.api_key, k.min_version, k.max_version) for k in r.api_keys]


NAMED_FIELDS = {
    "Produce": [_wrap(_produce_name), _wrap(_produce_records), _wrap(_produce_offset)],
    "Fetch": [_wrap(_fetch_records), _wrap(_fetch_offsets)],
    "Metadata": [_wrap(_metadata_brokers), _wrap(_metadata_topics)],
    "JoinGroup": [_wrap(_join_group), _wrap(_join_group_subscription)],
    "ApiVersions": [_wrap(_api_keys)],
}


def test_fetched_records_are_in_the_typed_fetch_view(spark):
    _, rows = typed_rows(spark, TANSU_CONFLUENT, "Fetch")
    assert len([rec for row in rows for rec in _wrap(_fetch_records)(row)]) == 30


def _paths(dtype, prefix=""):
    """Every nested field path of a type (array elements as [])."""
    out = set()
    if isinstance(dtype, ArrayType):
        return _paths(dtype.elementType, prefix + "[]")
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            out.add(prefix + "." + f.name)
            out |= _paths(f.dataType, prefix + "." + f.name)
    return out


def test_api_version_narrows_the_schema_to_that_version(spark):
    registry = decoder_for(None).registry
    union, _ = typed_rows(spark, TANSU_CONFLUENT, "Produce")
    narrowed, rows = typed_rows(spark, TANSU_CONFLUENT, "Produce", apiVersion="10")
    for column, message in (("request", "ProduceRequest"), ("response", "ProduceResponse")):
        assert narrowed.schema[column].dataType == typed_body_type(registry, message, [10])
    request_union, request_v10 = _paths(union.schema["request"].dataType), _paths(narrowed.schema["request"].dataType)
    assert request_v10 < request_union
    assert ".topic_data[].topic_id" in request_union - request_v10  # KIP-516: topic ids from Produce v13
    assert ".transactional_id" in request_v10 and ".topic_data[].name" in request_v10
    response_union = _paths(union.schema["response"].dataType)
    assert _paths(narrowed.schema["response"].dataType) < response_union
    expected = by_exchange(TANSU_CONFLUENT)
    assert len(rows) == 5
    for row in rows:
        e = expected[row.connection_id, row.correlation_id]
        assert_body_equal(row.request, e.request)
        assert_body_equal(row.response, e.response)


def test_api_version_returns_only_rows_of_that_version(spark):
    """librdkafka asks ApiVersions at v3, is answered at v0 and asks again: both versions are in the capture."""
    versions = {e.api_version for e in exchanges(MOCK_CONFLUENT) if e.api_name == "ApiVersions"}
    assert versions == {0, 3}
    df = spark.read.format("kafka-wire").option("api", "ApiVersions").option("apiVersion", 3).load(str(MOCK_CONFLUENT))
    rows = df.select("connection_id", "correlation_id", "api_version", "request", "response").collect()
    expected = {
        (e.connection_id, e.correlation_id): e
        for e in exchanges(MOCK_CONFLUENT)
        if e.api_name == "ApiVersions" and e.api_version == 3
    }
    assert sorted((r.connection_id, r.correlation_id) for r in rows) == sorted(expected)
    for row in rows:
        assert_body_equal(row.request, expected[row.connection_id, row.correlation_id].request)


def test_api_by_key_equals_api_by_name(spark):
    by_key = spark.read.format("kafka-wire").option("api", "18").load(str(TANSU_CONFLUENT))
    by_name = spark.read.format("kafka-wire").option("api", "ApiVersions").load(str(TANSU_CONFLUENT))
    assert by_key.schema == by_name.schema
    assert by_key.count() == 15
