"""A capture larger than splitSize is read by several tasks, each taking whole TCP connections."""

from __future__ import annotations

from collections import Counter

import pytest
from chispa import assert_df_equality

from kafka_protocol_source import read_capture

from .bigcapture import replicate
from .expected import TANSU_CONFLUENT

COLUMNS = [
    "capture_file",
    "connection_id",
    "correlation_id",
    "api_name",
    "api_version",
    "status",
    "latency_ms",
    "request_size",
    "response_size",
    "to_json(request) AS request",
    "to_json(response) AS response",
]


@pytest.fixture(scope="module")
def big_capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "four_sessions.pcap"
    assert replicate(TANSU_CONFLUENT, path, copies=4) == 4
    return path


def test_split_capture_gives_the_same_rows_as_one_partition(spark, big_capture):
    size = big_capture.stat().st_size
    whole = spark.read.format("kafka-wire").load(str(big_capture))
    split = spark.read.format("kafka-wire").option("splitSize", "20000").load(str(big_capture))
    assert whole.rdd.getNumPartitions() == 1
    assert split.rdd.getNumPartitions() == -(-size // 20000) >= 8
    assert_df_equality(split.selectExpr(*COLUMNS), whole.selectExpr(*COLUMNS), ignore_row_order=True)
    statuses = Counter(r.status for r in split.select("status").collect())
    assert statuses == Counter(e.status for e in read_capture(big_capture)) == {"ok": 4 * 69}


def test_split_records_view_equals_one_partition(spark, big_capture):
    cols = ["connection_id", "direction", "topic", "offset", "key", "value", "compression"]
    whole = spark.read.format("kafka-wire").option("view", "records").load(str(big_capture)).select(*cols)
    split = (
        spark.read.format("kafka-wire")
        .option("view", "records")
        .option("splitSize", "20000")
        .load(str(big_capture))
        .select(*cols)
    )
    assert_df_equality(split, whole, ignore_row_order=True)
    assert whole.where("direction = 'produce'").count() == 4 * 30
