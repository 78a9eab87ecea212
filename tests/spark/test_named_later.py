"""A capture that starts after a consumer learned its topic ids names them from later responses.

Real connections live for hours: a capture usually starts long after the consumer's Metadata
named the ids its Fetches use, and a client names them again only at its next refresh (five
minutes by default) or when another client connects. The capture here is the confluent session
started at its first Fetch by id, as five clients side by side, followed by a new client's
connection (the session's first Metadata connection, replayed later on a port of its own):
nothing names the ids before the Fetches, the new client does after them. The records and lag
views name those Fetches' topics as the whole session does, in one partition and split alike.
A stream names them from its session's files before the tail it re-reads, too.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark import naming_pass
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader, plan_partitions
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.views import topic_names
from kafka_protocol_source.views.records import record_row_size
from kafka_protocol_source.views.topic_names import first_names

from ..cuts import Cut, segments_of
from .expected import TANSU_CONFLUENT
from .named_captures import (
    NEW_CLIENT_PORT,
    as_client,
    late_clients,
    port_of,
    session,
    slices_apart,
    stream_into,
)


def _rows(view: str, path: Path, count: int = 1) -> list[dict]:
    options = ReadOptions.parse({"path": str(path), "view": view})
    reader = PartitionReader(options, default_schema(options))
    parts = plan_partitions([str(path)], -(-path.stat().st_size // count), index=True)
    assert len(parts) == count
    return [r for p in parts for batch in reader.read(p) for r in batch.to_pylist()]


def _fetched(rows: list[dict]) -> dict:
    return {(r["partition"], r["offset"]): (r["topic"], r["topic_id"]) for r in rows if r["direction"] == "fetch"}


def test_the_ids_are_named_only_after_the_fetches_that_use_them(named_later):
    exchanges = list(read_capture(named_later))
    fetches = [e for e in exchanges if e.api_key == 1 and e.api_version >= 13 and e.response]
    naming = [e for e in exchanges if first_names([e])]
    assert fetches and naming
    assert max(e.response_time for e in fetches) < min(e.response_time for e in naming)
    assert {port_of(e.client_address) for e in naming} == {NEW_CLIENT_PORT}
    # and some of them are read before the naming is: a late start is settled within the capture
    first_named = min(e.completed_at for e in naming)
    assert any(e.completed_at is not None and e.completed_at < first_named for e in fetches)


def test_fetched_records_are_named_as_in_the_whole_session(named_later):
    naming_pass.forget()
    got = _fetched(_rows("records", named_later))
    whole = _fetched(_rows("records", TANSU_CONFLUENT))
    assert got and all(topic for topic, _ in got.values())
    assert got == {k: whole[k] for k in got}


@pytest.mark.parametrize("view", ["records", "lag"])
def test_split_reads_name_them_as_one_partition_does(named_later, view):
    _split_reads_as_one_partition(view, named_later)


def _split_reads_as_one_partition(view: str, path: Path) -> None:
    """A read of ``path`` in slices that keep its naming connection apart names every fetched
    record, and gives the rows of a read in one partition."""
    one = _rows(view, path)
    naming_pass.forget()
    split = _rows(view, path, slices_apart(path))
    fetched = [r for r in one if view == "lag" or r["direction"] == "fetch"]
    assert fetched and all(r["topic"] for r in fetched)
    assert Counter(map(repr, split)) == Counter(map(repr, one))


def test_the_records_view_names_them_in_sql(spark, named_later):
    df = spark.read.format("kafka-wire").option("view", "records").load(str(named_later))
    df.createOrReplaceTempView("named_later_records")
    [row] = spark.sql(
        "SELECT count(*) AS fetched, count_if(topic IS NULL) AS unnamed, count(DISTINCT topic) AS topics "
        "FROM named_later_records WHERE direction = 'fetch'"
    ).collect()
    assert row.fetched > 0 and row.unnamed == 0 and row.topics == 1


@pytest.mark.parametrize("view", ["records", "lag"])
def test_rows_past_the_hold_budget_are_named_the_same(named_later, view, monkeypatch):
    """A reader holding more than it may looks ahead instead: the same rows, named the same."""
    whole = _rows(view, named_later)
    naming_pass.forget()
    monkeypatch.setattr(topic_names, "HOLD_BUDGET", 2048)
    assert Counter(map(repr, _rows(view, named_later))) == Counter(map(repr, whole))
    assert naming_pass.kept() == 1


@pytest.mark.parametrize("view", ["records", "lag"])
def test_a_whole_read_of_a_capture_that_never_names_them_reads_it_once(never_named, view):
    """Its rows wait for a name to the end of the read, which is all the capture says: no naming read."""
    naming_pass.forget()
    rows = _rows(view, never_named)
    fetched = [r for r in rows if view == "lag" or r["direction"] == "fetch"]
    assert fetched and all(r["topic"] is None and r["topic_id"] for r in fetched)
    assert naming_pass.kept() == 0


def test_the_hold_counts_the_record_headers():
    row = {"key": None, "value": b"v" * 100, "headers": []}
    plain = record_row_size(row)
    row["headers"] = [{"key": "trace-id", "value": b"x" * 200}] * 40
    assert record_row_size(row) >= plain + 40 * (len("trace-id") + 200)


def test_a_stream_names_them_from_later_packets_of_its_micro_batch(spark, named_later, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(named_later, folder)
    _stream_records(spark, folder, tmp_path, "named_later_stream")
    [row] = spark.sql(
        "SELECT count(*) AS fetched, count_if(topic IS NULL) AS unnamed "
        "FROM named_later_stream WHERE direction = 'fetch'"
    ).collect()
    batch = [r for r in _rows("records", named_later) if r["direction"] == "fetch"]
    assert row.fetched == len(batch) and row.unnamed == 0


@pytest.fixture(scope="module")
def named_earlier(tmp_path_factory) -> Path:
    """A rotated capture: the session's first naming connection; 4 s later, the last second of
    one of the five clients, as a client of its own; 2 s later, the five clients."""
    folder = tmp_path_factory.mktemp("named_earlier")
    _, port, broker_port = session()
    Cut(tuple(s for s in segments_of(TANSU_CONFLUENT) if port in (s.src_port, s.dst_port))).write(folder / "0.pcap")
    clients = late_clients()
    first = [s for s in clients if "10.0.0.2" in (s.src_ip, s.dst_ip)]
    last_second = [s for s in first if s.timestamp_ns >= first[-1].timestamp_ns - 1_000_000_000]
    shift = clients[0].timestamp_ns - 2_000_000_000 - last_second[-1].timestamp_ns
    Cut(tuple(as_client(last_second, broker_port, "10.0.9.2", shift))).write(folder / "1.pcap")
    Cut(clients).write(folder / "2.pcap")
    return folder


def test_a_stream_names_them_from_files_before_the_tail_it_re_reads(spark, named_earlier, tmp_path):
    """With a one-second idle timeout, the last file's micro-batch re-reads the file before it
    alone, which does not name the ids; the first file does."""
    naming_pass.forget()
    _stream_records(spark, named_earlier, tmp_path, "named_earlier_stream", maxFilesPerTrigger="1", idleTimeout="1")
    batch = spark.read.format("kafka-wire").option("view", "records").load(str(named_earlier))
    batch = batch.where("direction = 'fetch'").selectExpr("topic", "topic_id", "partition", "offset")
    stream = spark.sql("SELECT topic, topic_id, partition, offset FROM named_earlier_stream WHERE direction = 'fetch'")
    last = _fetched(_rows("records", named_earlier / "2.pcap"))
    assert last and not any(topic for topic, _ in last.values())  # the last file alone names nothing
    assert batch.where("topic IS NULL").count() == 0
    assert sorted(map(tuple, stream.collect())) == sorted(map(tuple, batch.collect()))


def _stream_records(spark, folder: Path, tmp_path: Path, table: str, **options) -> None:
    """The records view of a stream over ``folder`` into the memory table ``table``."""
    stream_into(spark, folder, tmp_path, table, view="records", **options)


@pytest.mark.parametrize("view", ["records", "lag"])
def test_split_reads_of_ids_named_early_read_only_the_start_for_names(named_early, view):
    """The slices of the five clients name their ids from a naming read of the whole capture,
    which stops at the naming connection: the clients' own exchanges are not read again."""
    _split_reads_as_one_partition(view, named_early)
    [ahead] = naming_pass.reads()
    assert not ahead.finished
    assert ahead.read < len(list(read_capture(named_early))) / 10


def test_the_reports_show_a_topic_the_capture_never_names_by_its_id_saying_so(spark, never_named):
    from kafka_protocol_source.cli.report import REPORT_QUERIES
    from kafka_protocol_source.report.queries import run_query

    records = spark.read.format("kafka-wire").option("view", "records").load(str(never_named))
    exchanges = spark.read.format("kafka-wire").load(str(never_named))
    [topic_id] = {r.topic_id for r in records.where("direction = 'fetch'").select("topic_id").collect()}
    records.createOrReplaceTempView("records")
    try:
        [row] = spark.sql(REPORT_QUERIES["Top topics by records"].format(top=10)).collect()
    finally:
        spark.catalog.dropTempView("records")
    assert row.topic == f"topic id {topic_id}" and row.fetched > 0
    [html_row] = run_query(spark, "topics", exchanges, records, {"top": 10}).collect()
    assert html_row.topic == f"topic id {topic_id}"
