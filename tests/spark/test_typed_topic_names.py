"""The typed views of apis that name topics by id give each row's ids with their names.

Fetch v13+ (and Produce v13, OffsetCommit v10, ConsumerGroupHeartbeat, ...) carry a topic id
instead of a name; ``topic_names`` maps every id of a row's request and response to the name the
capture gives it, as the records view names its records: from a naming response anywhere in the
capture, on another connection or minutes later as well. The captures are test_named_later's: a
session joined at its first Fetch by id, its ids named only after the Fetches (``named_later``)
or never (``never_named``).
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark import naming_pass
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader, plan_partitions
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.views import topic_names
from kafka_protocol_source.views.topic_names import first_names, topic_ids

from .expected import MOCK_AIOKAFKA, TANSU_CONFLUENT
from .named_captures import slices_apart, stream_into


def _typed(path: Path, count: int = 1, **options: str) -> list[dict]:
    opts = ReadOptions.parse({"path": str(path), "api": "Fetch", **options})
    reader = PartitionReader(opts, default_schema(opts), opts.apis)
    parts = plan_partitions([str(path)], -(-path.stat().st_size // count), index=True)
    assert len(parts) == count
    return [r for p in parts for batch in reader.read(p) for r in batch.to_pylist()]


def _session_names() -> dict[str, str]:
    return first_names(read_capture(TANSU_CONFLUENT))


def test_fetches_by_id_are_named_as_the_whole_session_names_them(named_later):
    naming_pass.forget()
    rows = _typed(named_later)
    by_id = [r for r in rows if r["api_version"] >= 13 and r["response"]]
    assert by_id and all(r["topic_names"] for r in by_id)
    names = _session_names()
    for row in by_id:
        ids = topic_ids(row["request"], row["response"])
        assert [i for i, _ in row["topic_names"]] == ids
        assert dict(row["topic_names"]) == {i: names[i] for i in ids}


def test_the_rows_are_the_exchanges_of_the_api_alone(named_later):
    """Naming responses are read for their names, not given as rows of another api's view."""
    rows = _typed(named_later)
    fetches = [e for e in read_capture(named_later) if e.api_key == 1]
    assert Counter(r["correlation_id"] for r in rows) == Counter(e.correlation_id for e in fetches)
    assert {r["api_name"] for r in rows} == {"Fetch"}


def test_a_split_read_names_them_as_one_partition_does(named_later):
    one = _typed(named_later)
    naming_pass.forget()
    split = _typed(named_later, slices_apart(named_later))
    assert Counter(map(repr, split)) == Counter(map(repr, one))


def test_typed_views_of_other_apis_or_versions_take_up_the_same_naming_read(named_later):
    """What teaches a typed view a name is the read mode alone: a worker reads a capture for names
    once, whichever typed views ask."""
    naming_pass.forget()
    count = slices_apart(named_later)
    assert _typed(named_later, count)
    [ahead] = naming_pass.reads()
    read = ahead.read
    rows = _typed(named_later, count, apiVersion="16")
    assert rows and all(name for r in rows if r["topic_names"] for _, name in r["topic_names"])
    assert naming_pass.reads() == [ahead] and ahead.read == read


def test_ids_the_capture_never_names_have_no_name(never_named):
    rows = [r for r in _typed(never_named) if r["response"]]
    assert rows and all(r["topic_names"] and all(name is None for _, name in r["topic_names"]) for r in rows)


def test_a_whole_read_of_a_capture_that_never_names_them_reads_it_once(never_named):
    """Its rows wait for a name to the end of the read, which is all the capture says: no naming read."""
    naming_pass.forget()
    assert _typed(never_named)
    assert naming_pass.kept() == 0


def test_rows_past_the_hold_budget_are_named_the_same(named_later, monkeypatch):
    whole = _typed(named_later)
    naming_pass.forget()
    monkeypatch.setattr(topic_names, "HOLD_BUDGET", 2048)
    assert Counter(map(repr, _typed(named_later))) == Counter(map(repr, whole))
    assert naming_pass.kept() == 1


def test_a_stream_names_them_from_later_packets_of_its_micro_batch(spark, named_later, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(named_later, folder)
    stream_into(spark, folder, tmp_path, "typed_named_later_stream", api="Fetch")
    rows = spark.sql("SELECT correlation_id, topic_names FROM typed_named_later_stream WHERE response IS NOT NULL")
    got = rows.collect()
    assert len(got) == len([r for r in _typed(named_later) if r["response"]])
    assert all(r.topic_names and None not in r.topic_names.values() for r in got)


def test_versions_without_ids_have_no_column_and_rows_without_ids_no_names():
    assert "topic_names" not in _typed(MOCK_AIOKAFKA, apiVersion="11")[0]  # Fetch v11 names topics
    assert all(r["topic_names"] is None for r in _typed(MOCK_AIOKAFKA))  # the union of versions has it
    plain = ReadOptions.parse({"path": str(MOCK_AIOKAFKA), "api": "JoinGroup"})
    assert "topic_names" not in default_schema(plain).fieldNames()


def test_the_name_of_each_fetched_topic_in_sql(spark, named_later):
    spark.read.format("kafka-wire").option("api", "Fetch").load(str(named_later)).createOrReplaceTempView(
        "typed_fetch_named_later"
    )
    rows = spark.sql(
        "SELECT coalesce(r.topic, topic_names[r.topic_id]) AS topic, count(*) AS n "
        "FROM typed_fetch_named_later LATERAL VIEW explode(response.responses) t AS r GROUP BY 1"
    ).collect()
    assert {row.topic for row in rows} == set(_session_names().values())
