"""The records view: exactly the records each capture's script produced, for every codec and magic.

One read of the whole sample folder, collected once (module fixture); every check below runs on
those rows. Produced records must equal ``NAME.produced.json`` as a multiset (rejected ones too:
their bytes are on the wire); a fetched record must be the accepted produced record at its offset.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from chispa import assert_df_equality

from .expected import SAMPLES, capture_names, manifest

COLUMNS = [
    "capture_file",
    "direction",
    "topic",
    "partition",
    "compression",
    "offset",
    "key",
    "value",
    "headers",
    "timestamp",
    "timestampType",
    "request_time",
]
# Spark's own Kafka source (KafkaRecordToRowConverter, with includeHeaders): names and types, in order
SPARK_KAFKA_COLUMNS = [
    ("key", "binary"),
    ("value", "binary"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp", "timestamp"),
    ("timestampType", "int"),
    ("headers", "array<struct<key:string,value:binary>>"),
]


@pytest.fixture(scope="module")
def records_df(spark):
    return spark.read.format("kafka-wire").option("view", "records").load(str(SAMPLES))


@pytest.fixture(scope="module")
def records(records_df):
    rows = records_df.select(*COLUMNS).collect()
    by_capture = {}
    for r in rows:
        by_capture.setdefault(r.capture_file.rsplit("/", 1)[1], []).append(r)
    return by_capture


def _bytes(v):
    return None if v is None else bytes(v)


def _record(r) -> tuple:
    return (
        r.topic,
        r.partition,
        r.compression,
        _bytes(r.key),
        _bytes(r.value),
        tuple((h.key, _bytes(h.value)) for h in r.headers),
    )


def _manifest_record(m) -> tuple:
    return m["topic"], m["partition"], m["codec"], m["key"], m["value"], tuple(m["headers"])


def test_columns_are_those_of_sparks_kafka_source(records_df):
    leading = [(f.name, f.dataType.simpleString()) for f in records_df.schema.fields[: len(SPARK_KAFKA_COLUMNS)]]
    assert leading == SPARK_KAFKA_COLUMNS


@pytest.mark.parametrize("capture", capture_names())
def test_produced_records_equal_the_manifest(records, capture):
    produced = [r for r in records[capture] if r.direction == "produce"]
    expected = manifest(capture)["records"]
    assert Counter(map(_record, produced)) == Counter(map(_manifest_record, expected))
    assert {r.compression for r in produced} == {m["codec"] for m in expected}


@pytest.mark.parametrize("capture", capture_names())
def test_fetched_records_are_the_accepted_produced_ones(records, capture):
    accepted = {
        (m["topic"], m["partition"], m["offset"]): m for m in manifest(capture)["records"] if m["error"] is None
    }
    fetched = [r for r in records[capture] if r.direction == "fetch"]
    for r in fetched:
        m = accepted[r.topic, r.partition, r.offset]
        assert (_bytes(r.key), _bytes(r.value), tuple((h.key, _bytes(h.value)) for h in r.headers)) == (
            m["key"],
            m["value"],
            tuple(m["headers"]),
        )
    if "rejected" not in capture:  # every session but that one has a consumer reading everything
        assert {(r.topic, r.partition, r.offset) for r in fetched} == set(accepted)


def test_produced_records_as_a_dataframe(spark, records_df):
    """The same comparison through chispa, for the whole folder at once (all codecs, magic 0, 1, 2)."""
    actual = records_df.where("direction = 'produce'").selectExpr(
        "element_at(split(capture_file, '/'), -1) AS capture",
        "topic",
        "partition",
        "compression",
        "key",
        "value",
        "headers",
    )
    expected = spark.createDataFrame(
        [
            (c, *_manifest_record(m)[:5], [{"key": k, "value": v} for k, v in m["headers"]])
            for c in capture_names()
            for m in manifest(c)["records"]
        ],
        actual.schema,
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_timestamps_are_create_times_near_the_request(records):
    """Records of magic 1 and 2 carry the producer's CreateTime (timestampType 0, as in Spark's source)."""
    checked = 0
    for capture, rows in records.items():
        if "magic0" in capture:
            continue
        for r in rows:
            if r.direction != "produce":
                continue
            assert r.timestampType == 0
            assert abs(r.request_time - r.timestamp) < timedelta(seconds=60), (capture, r)
            checked += 1
    assert checked == 8 * 30 - 6 * 2  # two legacy captures of 24 records


def test_a_produced_record_whose_offset_was_never_assigned_has_none():
    """No Produce response captured (a capture of one side, acks=0) or a refused batch: the
    producer's own numbering (0, 1, 2... per batch) is not a log offset, and joined with the
    fetched records on (topic, partition, offset) it paired different records."""
    from dataclasses import replace

    from kafka_protocol_source.spec.api_keys import PRODUCE
    from kafka_protocol_source.views.records import TopicNames, record_rows
    from tests.samples.catalog import exchanges, sample_names

    checked = 0
    for name in sample_names():
        names, rows = TopicNames(), []
        for e in exchanges(name):
            names.learn(e)
            unanswered = replace(e, response=None) if e.api_key == PRODUCE else e
            rows += list(record_rows(unanswered, names))
        produced = [r for r in rows if r["direction"] == "produce"]
        fetched = {(r["topic"], r["partition"], r["offset"]) for r in rows if r["direction"] == "fetch"}
        assert all(r["offset"] is None and r["offset_assigned"] is False for r in produced), name
        assert not {(r["topic"], r["partition"], r["offset"]) for r in produced} & fetched, name
        refused = [r for e in exchanges(name) for r in record_rows(e, TopicNames()) if r["error_name"]]
        assert all(r["offset"] is None for r in refused if r["direction"] == "produce"), name
        checked += len(produced)
    assert checked >= 8 * 24


@pytest.mark.parametrize("cut", [1, 40, 300])
def test_a_fetched_batch_cut_short_gives_no_records_as_the_consumer_reads_none(cut):
    """A broker ends a Fetch response with a partial batch when the size limit bites; Kafka's
    consumer (and kafka-python) drop it and fetch its records again, so it has no rows here, an
    uncompressed batch as a compressed one (a compressed one cannot be read cut anyway)."""
    from types import SimpleNamespace

    from kafka.record.memory_records import MemoryRecords

    from kafka_protocol_source.records import decode_records
    from kafka_protocol_source.spec.api_keys import FETCH
    from kafka_protocol_source.views.records import TopicNames, record_rows
    from tests.records.records_builders import build_v2

    entries = [(1_700_000_000_000 + i, b"k%d" % i, b"v" * 90, []) for i in range(6)]
    whole, last = build_v2(entries), build_v2(entries)
    data = whole + last[: len(last) - cut]
    oracle = [r.offset for batch in MemoryRecords(data) for r in batch]
    partition = {"partition_index": 0, "error_code": 0, "records": decode_records(data)}
    fetch = SimpleNamespace(
        api_key=FETCH,
        request={"isolation_level": 0},
        response={"responses": [{"topic": "t", "partitions": [partition]}]},
        **dict.fromkeys(("client_id", "client_address", "broker_address", "request_time", "response_time")),
        **dict.fromkeys(("api_version", "capture_file", "connection_id", "error", "request_size", "response_size")),
        **dict.fromkeys(("raw_request", "raw_response")),
        status="ok",
    )
    rows = list(record_rows(fetch, TopicNames()))
    cut_batch = partition["records"][-1]
    assert cut_batch["truncated"] and cut_batch["records"]  # whole records inside it, which old code gave as rows
    assert [r["offset"] for r in rows] == oracle == list(range(6))


def test_produced_records_carry_the_log_offsets_the_broker_assigned_and_refusals_are_marked():
    from kafka_protocol_source.views.records import TopicNames, record_rows
    from tests.samples.catalog import exchanges, sample_names

    for name in sample_names():
        names, rows = TopicNames(), []
        for e in exchanges(name):
            names.learn(e)
            rows += list(record_rows(e, names))
        produced = [r for r in rows if r["direction"] == "produce"]
        fetched = {(r["topic"], r["partition"], r["offset"], r["value"]) for r in rows if r["direction"] == "fetch"}
        accepted = [r for r in produced if r["offset_assigned"]]
        refused = [r for r in produced if r["error_name"]]
        assert not [r for r in accepted if r["error_name"]]
        if fetched:  # every accepted record is fetched at the offset its Produce response gave
            assert {(r["topic"], r["partition"], r["offset"], r["value"]) for r in accepted} == fetched, name
        if name == "tansu_kafka_python_legacy_magic1_rejected":
            assert len(refused) == len(produced) == 24 and {r["error_name"] for r in refused} == {"UNKNOWN_PRODUCER_ID"}
            assert not accepted
