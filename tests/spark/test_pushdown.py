"""Filters on api_key, api_name and request_time give the same rows with pushdown on and off.

With ``spark.sql.python.filterPushdown.enabled`` true the reader takes api filters and skips
decoding other exchanges; off, PySpark refuses readers that push filters, so the source must
hand it one that does not. Either way, the rows are those read_capture gives, filtered in Python.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from .expected import TANSU_CONFLUENT, exchanges

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _window():
    times = sorted(e.request_time for e in exchanges(TANSU_CONFLUENT) if e.request_time is not None)
    return times[len(times) // 4], times[3 * len(times) // 4]


def _ts(t) -> str:
    return f"timestamp'{t.strftime('%Y-%m-%d %H:%M:%S.%f')}'"  # the session time zone is UTC


LOW, HIGH = _window()
QUERIES = {  # SQL condition -> the same condition on an Exchange
    "api_name = 'Produce'": lambda e: e.api_name == "Produce",
    "api_key in (0, 1)": lambda e: e.api_key in (0, 1),
    "api_name in ('Produce', 'produce', 'Nope')": lambda e: e.api_name == "Produce",
    "api_key = 3 or status <> 'ok'": lambda e: e.api_key == 3 or e.status != "ok",
    f"request_time >= {_ts(LOW)} and request_time < {_ts(HIGH)}": lambda e: LOW <= e.request_time < HIGH,
    f"request_time > {_ts(LOW)} and api_key = 3": lambda e: e.request_time > LOW and e.api_key == 3,
    f"request_time <= {_ts(HIGH + timedelta(microseconds=1))} and api_name = 'Metadata'": lambda e: (
        e.request_time <= HIGH and e.api_name == "Metadata"
    ),
}


@pytest.fixture(params=["true", "false"], ids=["pushdown", "no-pushdown"])
def pushdown(spark, request):
    before = spark.conf.get(PUSHDOWN, None)
    spark.conf.set(PUSHDOWN, request.param)
    yield request.param
    if before is None:
        spark.conf.unset(PUSHDOWN)
    else:
        spark.conf.set(PUSHDOWN, before)


def _union_of_queries(spark, df=None):
    """Every query as one branch of a union (one job), each on its own load unless ``df`` is given."""
    from pyspark.sql import functions as F

    union = None
    for i, condition in enumerate(QUERIES):
        source = df if df is not None else spark.read.format("kafka-wire").load(str(TANSU_CONFLUENT))
        part = source.where(condition).select(F.lit(i).alias("query"), "connection_id", "correlation_id", "api_name")
        union = part if union is None else union.unionByName(part)
    return union


def _assert_rows_of_each_query(union, pushdown):
    got = {i: set() for i in range(len(QUERIES))}
    for r in union.collect():
        got[r.query].add((r.connection_id, r.correlation_id, r.api_name))
    for i, (condition, keep) in enumerate(QUERIES.items()):
        want = {(e.connection_id, e.correlation_id, e.api_name) for e in exchanges(TANSU_CONFLUENT) if keep(e)}
        assert want, condition
        assert got[i] == want, (pushdown, condition)


def test_filters_give_the_same_rows_with_and_without_pushdown(spark, pushdown):
    _assert_rows_of_each_query(_union_of_queries(spark), pushdown)


def test_reused_dataframe_pushdown_stale_read_info(spark, pushdown):
    """Regression: one DataFrame scanned with different filters (union branches, then a plain count).

    Spark 4.3.0 keeps the read planned during filter pushdown on the data source instance that
    every scan of one DataFrame shares, so each scan read with the last pushed api filter: a union
    of api_name = 'Produce' and api_key in (0, 1) gave Fetch rows for the first, and
    ``df.where("api_name = 'Produce'").count()`` followed by ``df.count()`` gave 5, not 69.
    """
    df = spark.read.format("kafka-wire").load(str(TANSU_CONFLUENT))
    _assert_rows_of_each_query(_union_of_queries(spark, df), pushdown)
    assert df.where("api_name = 'Produce'").count() == 5
    assert df.count() == len(exchanges(TANSU_CONFLUENT))


def test_pushed_api_filter_still_decodes_the_kept_bodies(spark, pushdown):
    rows = (
        spark.read.format("kafka-wire")
        .load(str(TANSU_CONFLUENT))
        .where("api_key = 0")
        .selectExpr("request:topic_data[0].name::string AS topic")
        .collect()
    )
    assert [r.topic for r in rows] == ["kw.confluent_kafka"] * 5
