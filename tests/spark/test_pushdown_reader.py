"""The pushdown reader, driven as Spark would drive it, without a Spark session.

Spark is not handed this reader yet (see ``KafkaWirePushdownReader``); these tests keep it correct
until it is: the filters it takes are applied before decoding and the rows equal read_capture's,
filtered in Python; the filters it hands back are the ones Spark must still apply.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan

from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.source import KafkaWirePushdownReader, default_schema

from .expected import TANSU_CONFLUENT, exchanges


def _reader() -> KafkaWirePushdownReader:
    options = ReadOptions.parse({"path": str(TANSU_CONFLUENT)})
    return KafkaWirePushdownReader(options, default_schema(options))


def _rows(reader) -> set[tuple[str, int, str]]:
    got = set()
    for partition in reader.partitions():
        for batch in reader.read(partition):
            table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else None
            assert table is not None, type(batch)
            for row in table.select(["connection_id", "correlation_id", "api_name"]).to_pylist():
                got.add((row["connection_id"], row["correlation_id"], row["api_name"]))
    return got


def _want(keep) -> set[tuple[str, int, str]]:
    return {(e.connection_id, e.correlation_id, e.api_name) for e in exchanges(TANSU_CONFLUENT) if keep(e)}


def test_api_filters_are_taken_and_only_those_exchanges_are_read():
    reader = _reader()
    filters = [EqualTo(("api_name",), "Produce"), In(("api_key",), (0, 1, 3))]
    assert list(reader.pushFilters(filters)) == []
    assert reader.apis == frozenset({0})
    want = _want(lambda e: e.api_name == "Produce")
    assert want and _rows(reader) == want


def test_an_api_name_matches_exactly_and_unknown_names_select_nothing():
    reader = _reader()
    assert list(reader.pushFilters([In(("api_name",), ("produce", "Nope"))])) == []
    assert reader.apis == frozenset()
    assert _rows(reader) == set()


def test_time_filters_narrow_decoding_but_are_handed_back_to_spark():
    times = sorted(e.request_time for e in exchanges(TANSU_CONFLUENT) if e.request_time is not None)
    low, high = times[len(times) // 4], times[3 * len(times) // 4]
    reader = _reader()
    filters = [GreaterThanOrEqual(("request_time",), low), LessThan(("request_time",), high)]
    assert list(reader.pushFilters(filters)) == filters
    assert reader.window is not None
    low_ns, high_ns = reader.window
    assert low_ns is not None and high_ns is not None and low_ns < high_ns
    # Widened by a day (literals may come in the session's time zone), so every exchange in the
    # window is still read; Spark applies the exact bounds to what comes back.
    assert _want(lambda e: e.request_time is not None and low <= e.request_time < high) <= _rows(reader)
    narrow = KafkaWirePushdownReader(reader.options, reader.schema)
    narrow.window = (None, low_ns - 2 * 86_400 * 10**9)  # a window that ends before the capture
    assert _rows(narrow) <= _want(lambda e: e.request_time is None)


def test_filters_on_other_columns_are_left_to_spark():
    reader = _reader()
    filters = [EqualTo(("status",), "ok"), EqualTo(("client_id",), "x")]
    assert list(reader.pushFilters(filters)) == filters
    assert reader.apis is None and reader.window is None
    assert _rows(reader) == _want(lambda e: True)
