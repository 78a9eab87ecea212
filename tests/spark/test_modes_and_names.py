"""The read mode is for a view's own rows. The records, lag and typed views also read Metadata
(and the like) for the names of topic ids; those exchanges are not rows of the view, so the
mode neither drops nor fails on them. librdkafka's mock cluster answers Metadata v13 with a
trailing byte: a malformed row whose body, read leniently, names the topics all the same."""

from __future__ import annotations

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader, plan_partitions
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.spec.api_keys import METADATA

from .expected import SAMPLES

CAPTURE = SAMPLES / "mock_confluent_kafka_all_codecs_any_sll2.pcap"


def _rows(**raw):
    options = ReadOptions.parse({"path": str(CAPTURE), **raw})
    reader = PartitionReader(options, default_schema(options), options.apis)
    return [row for p in plan_partitions([str(CAPTURE)], 1 << 40, index=True) for row in reader._rows(p)]


def test_the_sample_names_its_topics_only_in_malformed_metadata():
    metadata = [e for e in read_capture(CAPTURE) if e.api_key == METADATA]
    assert metadata and {e.status for e in metadata} == {"malformed"}
    assert all(e.response for e in metadata)  # the body as decoded is kept


@pytest.mark.parametrize("mode", ["DROPMALFORMED", "FAILFAST"])
def test_records_and_lag_are_named_in_every_mode(mode):
    for view, topic in (("records", lambda r: r["topic"]), ("lag", lambda r: r["topic"])):
        permissive = [topic(r) for r in _rows(view=view)]
        assert permissive and None not in permissive, view
        assert [topic(r) for r in _rows(view=view, mode=mode)] == permissive, (view, mode)


@pytest.mark.parametrize("mode", ["DROPMALFORMED", "FAILFAST"])
def test_a_typed_fetch_view_is_named_in_every_mode(mode):
    def names(rows):
        return [(r.correlation_id, r.topic_names) for r in rows]

    permissive = names(_rows_typed("Fetch", "PERMISSIVE"))
    assert any(n for _, n in permissive)  # (a Fetch that names no topic by id has none)
    assert names(_rows_typed("Fetch", mode)) == permissive


def _rows_typed(api: str, mode: str):
    options = ReadOptions.parse({"path": str(CAPTURE), "api": api, "mode": mode})
    schema = default_schema(options)
    reader = PartitionReader(options, schema, options.apis)
    batches = [b for p in plan_partitions([str(CAPTURE)], 1 << 40, index=True) for b in reader.read(p)]
    return [type("Row", (), row)() for b in batches for row in b.to_pylist()]


def test_dropmalformed_changes_no_connection_fact():
    """A connections row counts its connection's exchanges, bad ones too (``exchanges_not_ok``):
    dropping the malformed ones first made Kafka connections 'not Kafka' and hid their errors."""
    permissive = _rows(view="connections")
    assert any(r["exchanges_not_ok"] for r in permissive)
    assert _rows(view="connections", mode="DROPMALFORMED") == permissive
