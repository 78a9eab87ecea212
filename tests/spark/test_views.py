"""The connections, groups and lag views through Spark: schemas, and values equal to the
pyspark-free builders' (which tests/views checks against tshark and the sample clients)."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark.view_schemas import CONNECTIONS_VIEW, GROUPS_VIEW, LAG_VIEW
from kafka_protocol_source.views.connections import CONNECTION_COLUMNS, read_connections
from kafka_protocol_source.views.group_model import GROUP_COLUMNS
from kafka_protocol_source.views.lag import LAG_COLUMNS, lag_rows

from .expected import SAMPLES, manifest

CAPTURE = SAMPLES / "tansu_confluent_kafka_all_codecs.pcap"
PORT = manifest("tansu_confluent_kafka_all_codecs.pcap")["broker"]["port"]


def read(spark, view, path=CAPTURE, **options):
    reader = spark.read.format("kafka-wire").option("view", view).option("ports", str(PORT))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(path))


@pytest.mark.parametrize(
    "schema, columns",
    [(CONNECTIONS_VIEW, CONNECTION_COLUMNS), (GROUPS_VIEW, GROUP_COLUMNS), (LAG_VIEW, LAG_COLUMNS)],
    ids=["connections", "groups", "lag"],
)
def test_each_view_schema_has_its_builder_s_columns_in_order(schema, columns):
    assert tuple(schema.fieldNames()) == columns


@pytest.mark.parametrize(
    "view, schema", [("connections", CONNECTIONS_VIEW), ("groups", GROUPS_VIEW), ("lag", LAG_VIEW)]
)
def test_the_view_option_selects_the_schema(spark, view, schema):
    assert read(spark, view).schema == schema


def test_connections_are_the_builder_s_rows(spark):
    columns = [
        "connection_id",
        "client_packets",
        "broker_packets",
        "client_bytes",
        "broker_bytes",
        "client_retransmissions",
        "handshake_rtt_ms",
        "ended",
        "ended_by",
        "client_ids",
        "exchanges",
        "error_names",
    ]
    got = read(spark, "connections").select(*columns)
    rows = read_connections(CAPTURE, ports=[PORT])
    expected = spark.createDataFrame([Row(**{c: r[c] for c in columns}) for r in rows], schema=got.schema)
    assert_df_equality(got, expected, ignore_row_order=True)
    assert got.count() == 15


def test_a_consumer_group_generation_in_sql(spark):
    read(spark, "groups").createOrReplaceTempView("groups")
    got = spark.sql("""SELECT group_id, generation_id, member_count, joins, rebalance_errors, ended,
                              members[0].assignment[0].partitions AS partitions,
                              rebalance_steps[0].error AS first_step
                       FROM groups""")
    expected = spark.createDataFrame(
        [
            Row(
                group_id="kw.confluent_kafka.group",
                generation_id=0,
                member_count=1,
                joins=2,
                rebalance_errors=["MEMBER_ID_REQUIRED"],
                ended="member_left",
                partitions=[0],
                first_step="MEMBER_ID_REQUIRED",
            )
        ],
        schema=got.schema,
    )
    assert_df_equality(got, expected)


def test_lag_is_a_query_and_topic_ids_are_named(spark):
    read(spark, "lag").createOrReplaceTempView("lag")
    got = spark.sql("""SELECT topic, partition, min(fetch_offset) AS first_offset, max(high_watermark) AS hwm,
                              max(lag) AS max_lag, min_by(lag, request_time) AS first_lag,
                              max_by(lag, request_time) AS last_lag, count(*) AS fetches
                       FROM lag GROUP BY topic, partition""")
    python = [r for r in lag_rows(read_capture(CAPTURE, ports=[PORT]))]
    expected = spark.createDataFrame(
        [
            Row(
                topic="kw.confluent_kafka",
                partition=0,
                first_offset=0,
                hwm=30,
                max_lag=30,
                first_lag=30,
                last_lag=0,
                fetches=len(python),
            )
        ],
        schema=got.schema,
    )
    assert_df_equality(got, expected)


def test_the_views_are_batch_only(spark, tmp_path):
    query = (
        spark.readStream.format("kafka-wire")
        .option("view", "groups")
        .load(str(SAMPLES))
        .writeStream.format("memory")
        .queryName("groups_stream")
        .option("checkpointLocation", str(tmp_path))
        .start()
    )
    try:
        with pytest.raises(Exception, match="read in batch only"):
            query.awaitTermination(120)
    finally:
        query.stop()


def test_typed_exchanges_do_not_combine_with_a_view(spark):
    with pytest.raises(Exception, match="cannot be combined with view=lag"):
        _ = read(spark, "lag", api="Fetch").schema
