"""The exchanges view names the topic ids of each row's bodies, as the typed views do.

Fetch v13+ (and Produce v13, Metadata v10+, ...) carry topic ids, not names: without
``topic_names`` an analyst reading the exchanges view sees a UUID where the topic goes. The
captures are test_named_later's: a session joined at its first Fetch by id, its ids named only
after the Fetches, by a connection of its own.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pyspark.sql.types import StructType

from kafka_protocol_source import read_capture
from kafka_protocol_source.codec.decoder import decoder_for
from kafka_protocol_source.spark import naming_pass
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader, plan_partitions
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.views.topic_names import TOPIC_NAMES, IdCarriers, first_names, topic_ids

from ..samples.catalog import samples
from .expected import TANSU_CONFLUENT
from .named_captures import slices_apart

_KEY = ("connection_id", "correlation_id", "api_key", "status")


def _rows(path: Path, count: int = 1, schema: StructType | None = None, **options: str) -> list[dict]:
    opts = ReadOptions.parse({"path": str(path), **options})
    reader = PartitionReader(opts, schema or default_schema(opts), opts.apis)
    parts = plan_partitions([str(path)], -(-path.stat().st_size // count), index=True)
    assert len(parts) == count
    return [r for p in parts for batch in reader.read(p) for r in batch.to_pylist()]


def _names(rows: list[dict]) -> Counter:
    return Counter((tuple(r[k] for k in _KEY), repr(r[TOPIC_NAMES])) for r in rows)


def test_fetches_by_id_are_named_as_the_whole_session_names_them(named_later):
    naming_pass.forget()
    rows = _rows(named_later)
    names = first_names(read_capture(TANSU_CONFLUENT))
    by_exchange = {(e.connection_id, e.correlation_id, e.api_key): e for e in read_capture(named_later)}
    fetches = [r for r in rows if r["api_name"] == "Fetch" and r["api_version"] >= 13 and r["status"] == "ok"]
    assert fetches
    for row in rows:
        ex = by_exchange.get((row["connection_id"], row["correlation_id"], row["api_key"]))
        ids = topic_ids(ex.request, ex.response) if ex is not None else []
        if ids:
            assert row[TOPIC_NAMES] == [(i, names[i]) for i in ids], row
        else:
            assert row[TOPIC_NAMES] is None, row


def test_the_names_are_the_typed_views_and_a_split_read_gives_them_too(named_later):
    naming_pass.forget()
    exchanges = [r for r in _rows(named_later) if r["api_name"] == "Fetch"]
    typed = _rows(named_later, api="Fetch")
    assert _names(exchanges) == _names(typed)
    naming_pass.forget()
    split = [r for r in _rows(named_later, slices_apart(named_later)) if r["api_name"] == "Fetch"]
    assert _names(split) == _names(typed)


def test_the_rows_are_those_of_the_view_without_the_column(named_later):
    """Rows that wait for a name come later, not fewer, and otherwise as they were."""
    opts = ReadOptions.parse({"path": str(named_later)})
    without = StructType([f for f in default_schema(opts).fields if f.name != TOPIC_NAMES])
    with_names = [{k: v for k, v in r.items() if k != TOPIC_NAMES} for r in _rows(named_later)]
    assert Counter(map(repr, with_names)) == Counter(map(repr, _rows(named_later, schema=without)))


def test_only_bodies_that_can_hold_ids_are_walked_and_none_with_ids_is_passed_over():
    carries = IdCarriers(decoder_for(None).registry)
    walked = passed = 0
    for sample in samples():
        for ex in read_capture(sample.path):
            if ex.api_key is None or ex.api_version is None:
                continue
            if carries(ex.api_key, ex.api_version):
                walked += 1
            else:
                assert not topic_ids(ex.request, ex.response), (sample.path, ex.api_name, ex.api_version)
                passed += 1
    assert walked and passed > walked
