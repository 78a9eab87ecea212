"""The default exchanges view against read_capture: counts per api, SQL, VARIANT paths, user schemas."""

from __future__ import annotations

from collections import Counter

from chispa import assert_df_equality
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, ShortType, StringType, StructField, StructType

from kafka_protocol_source import read_capture

from ..cuts import one_side, segments_of
from .expected import SAMPLES, TANSU_CONFLUENT, TANSU_REJECTED, capture_names, exchanges


def test_counts_per_api_key_equal_read_capture(spark):
    df = spark.read.format("kafka-wire").load(str(SAMPLES))  # every capture in the folder, one job
    actual = df.groupBy("capture_file", "api_key").agg(F.count(F.lit(1)).alias("exchanges"))
    counts = Counter()
    for name in capture_names():
        counts.update((str(SAMPLES / name), e.api_key) for e in exchanges(SAMPLES / name))
    schema = StructType(
        [
            StructField("capture_file", StringType()),
            StructField("api_key", ShortType()),
            StructField("exchanges", LongType()),
        ]
    )
    expected = spark.createDataFrame([(f, k, n) for (f, k), n in counts.items()], schema)
    assert len(counts) > 50
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_sql_temporary_view_group_by(spark):
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW traffic USING `kafka-wire` OPTIONS (path '{TANSU_CONFLUENT}')")
    actual = spark.sql(
        "SELECT api_name, status, count(*) AS n, max(api_version) AS v FROM traffic GROUP BY api_name, status"
    )
    counts = Counter((e.api_name, e.status) for e in exchanges(TANSU_CONFLUENT))
    versions = {}
    for e in exchanges(TANSU_CONFLUENT):
        versions[e.api_name, e.status] = max(versions.get((e.api_name, e.status), -1), e.api_version)
    expected = spark.createDataFrame(
        [(a, s, n, versions[a, s]) for (a, s), n in counts.items()], "api_name string, status string, n long, v short"
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    spark.catalog.dropTempView("traffic")


def test_variant_paths(spark):
    df = spark.read.format("kafka-wire").load(str(TANSU_CONFLUENT)).where("api_name = 'Metadata'")
    actual = df.selectExpr(
        "connection_id",
        "correlation_id",
        "request:topics[0].name::string AS first_topic",
        "variant_get(response, '$.throttle_time_ms', 'int') AS throttle_time_ms",
        "variant_get(response, '$.brokers[0].port', 'int') AS broker_port",
    )
    expected = spark.createDataFrame(
        [
            (
                e.connection_id,
                e.correlation_id,
                (e.request["topics"] or [{}])[0].get("name"),
                e.response["throttle_time_ms"],
                e.response["brokers"][0]["port"],
            )
            for e in exchanges(TANSU_CONFLUENT)
            if e.api_name == "Metadata"
        ],
        "connection_id string, correlation_id int, first_topic string, throttle_time_ms int, broker_port int",
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    assert any(r.first_topic for r in actual.collect())  # the path reaches real values, not only nulls


def test_user_schema_with_a_subset_of_columns(spark):
    df = (
        spark.read.format("kafka-wire")
        .schema("status string, api_name string, correlation_id int, latency_ms double")
        .load(str(TANSU_CONFLUENT))
    )
    assert df.columns == ["status", "api_name", "correlation_id", "latency_ms"]
    expected = spark.createDataFrame(
        [(e.status, e.api_name, e.correlation_id, e.latency_ms) for e in exchanges(TANSU_CONFLUENT)], df.schema
    )
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)


def test_error_responses_are_named_and_not_ok(spark):
    """Every Produce of this capture was refused with 59 UNKNOWN_PRODUCER_ID (Kafka's Errors.java)."""
    df = spark.read.format("kafka-wire").load(str(TANSU_REJECTED))
    produce = df.where("api_name = 'Produce'").select("status", "error_codes", "error_names", "outcome").collect()
    assert len(produce) == sum(e.api_name == "Produce" for e in exchanges(TANSU_REJECTED)) == 4
    for row in produce:
        assert (row.status, row.error_codes, row.error_names, row.outcome) == (
            "ok",
            [59],
            ["UNKNOWN_PRODUCER_ID"],
            "error_response",
        )
    others = df.where("api_name <> 'Produce' OR api_name IS NULL").select("status", "error_codes", "outcome").collect()
    assert others
    for row in others:
        assert row.outcome == ("error_response" if row.status == "ok" and row.error_codes else row.status)


def test_a_capture_of_the_brokers_side_alone_reads_with_versions_left_unknown(spark, tmp_path):
    """Its responses are read by which api's layouts read them; some by an api whose versions read
    them alike, the version left null. Those rows once crashed the view (error codes by version)."""
    segments = segments_of(TANSU_CONFLUENT)
    broker_port = next(e.broker_address for e in exchanges(TANSU_CONFLUENT)).rsplit(":", 1)[1]
    path = one_side(segments, int(broker_port)).write(tmp_path / "brokers_side.pcap")
    rows = spark.read.format("kafka-wire").load(str(path)).collect()
    expected = list(read_capture(path))
    assert Counter((r.api_key, r.api_version, r.status) for r in rows) == Counter(
        (e.api_key, e.api_version, e.status) for e in expected
    )
    unknown = [r for r in rows if r.api_key is not None and r.api_version is None]
    assert unknown and all(r.status == "request_missing" and r.response is not None for r in unknown)
    assert {r.outcome for r in unknown} == {"request_missing"}
