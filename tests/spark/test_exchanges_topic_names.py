"""With ``topicNames``, the exchanges view names the topic ids of each row's bodies, as the typed
views do.

Fetch v13+ (and Produce v13, Metadata v10+, ...) carry topic ids, not names: without
``topic_names`` an analyst reading the exchanges view sees a UUID where the topic goes. The
column is asked for (the source cannot tell whether a query reads it, and naming may read the
capture twice). The captures are test_named_later's: a session joined at its first Fetch by id,
its ids named only after the Fetches, by a connection of its own.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark.sql.types import StructType

from kafka_protocol_source import read_capture
from kafka_protocol_source.codec.decoder import decoder_for
from kafka_protocol_source.spark import naming_pass
from kafka_protocol_source.spark.options import OptionError, ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader, plan_partitions
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.spec.api_keys import ENVELOPE
from kafka_protocol_source.views.topic_names import TOPIC_NAMES, IdCarriers, IdNaming, first_names, topic_ids

from ..samples.catalog import samples
from .expected import TANSU_CONFLUENT
from .named_captures import slices_apart

_KEY = ("connection_id", "correlation_id", "api_key", "status")


def _rows(path: Path, count: int = 1, schema: StructType | None = None, **options: str) -> list[dict]:
    asked = {} if "api" in options else {"topicNames": "true"}  # (a typed view has it by its api)
    opts = ReadOptions.parse({"path": str(path), **asked, **options})
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
    without = default_schema(opts)
    assert TOPIC_NAMES not in without.fieldNames()  # (asked for only)
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


def test_a_row_the_mode_drops_still_names_the_ids_of_others():
    """rdkafka's mock broker answers Metadata with a byte too many: read leniently, the row is
    malformed, and DROPMALFORMED drops it; the names it gives still name the Fetches."""
    path = Path("sample_captures/mock_confluent_kafka_all_codecs_any_sll2.pcap")
    naming_pass.forget()
    kept = [r for r in _rows(path) if r["api_name"] == "Fetch"]
    naming_pass.forget()
    dropped = [r for r in _rows(path, mode="DROPMALFORMED") if r["api_name"] == "Fetch"]
    assert kept and all(name for r in kept for _, name in r[TOPIC_NAMES] or [("", "none")])
    assert _names(dropped) == _names(kept)


def test_an_envelope_is_walked_for_the_ids_of_what_it_carries():
    carries = IdCarriers(decoder_for(None).registry)
    inner = {"api_name": "Metadata", "body": {"topics": [{"topic_id": "0b9f3c3e-6c55-4b8e-9a7e-5d5a3b2c1d0e"}]}}
    envelope = SimpleNamespace(api_key=ENVELOPE, api_version=0, request={"request_data_decoded": inner}, response=None)
    assert IdNaming(carries=carries).of(envelope) == [("0b9f3c3e-6c55-4b8e-9a7e-5d5a3b2c1d0e", None)]


def test_topic_names_is_an_exchanges_view_column():
    with pytest.raises(OptionError, match="topicNames adds topic_names to the exchanges view; view=records names"):
        ReadOptions.parse({"path": "x.pcap", "view": "records", "topicNames": "true"})
    with pytest.raises(OptionError, match="view=lag has no such column"):
        ReadOptions.parse({"path": "x.pcap", "view": "lag", "topicNames": "true"})
