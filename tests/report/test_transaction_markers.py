"""Report counts are the applications' records: a transaction marker (a control record, one per
partition a transaction touched) is a record in the log, but no consumer application sees it, and
a read_committed consumer drops the fetched records of aborted transactions, so neither the HTML
report's queries nor ``kafka-wire report``'s count them."""

from __future__ import annotations

from pyspark.sql import functions as F

from kafka_protocol_source.cli.report import REPORT_QUERIES
from kafka_protocol_source.report.compute import compute_report
from kafka_protocol_source.report.queries import run_query

from ..conftest import SAMPLES

CAPTURE = str(SAMPLES / "mock_confluent_kafka_all_codecs_any_sll2.pcap")


def test_transaction_markers_are_not_counted_as_records(spark):
    from kafka_protocol_source.spark import register

    register(spark)
    exchanges = spark.read.format("kafka-wire").load(CAPTURE)
    records = spark.read.format("kafka-wire").option("view", "records").load(CAPTURE)
    assert records.where("is_control").count() == 0  # the sample has none: markers are added here
    assert records.where("is_aborted").count() == 0
    markers = records.limit(3).withColumn("is_control", F.lit(True))
    aborted = records.where("direction = 'fetch'").limit(2).withColumn("is_aborted", F.lit(True))
    with_markers = records.unionByName(markers).unionByName(aborted)

    def summary(recs) -> dict:
        return run_query(spark, "summary", exchanges, recs, {}).first().asDict()

    assert summary(with_markers) == summary(records)

    def top_topics(recs) -> list:
        recs.createOrReplaceTempView("records")
        try:
            return spark.sql(REPORT_QUERIES["Top topics by records"].format(top=10)).collect()
        finally:
            spark.catalog.dropTempView("records")

    assert top_topics(with_markers) == top_topics(records)
    assert top_topics(records)  # there are records to count


def test_the_html_report_leaves_markers_and_aborted_records_out(spark):
    """compute_report reads only the columns its queries use: the markers must be left out before."""
    from kafka_protocol_source.spark import register

    register(spark)
    exchanges = spark.read.format("kafka-wire").load(CAPTURE)
    records = spark.read.format("kafka-wire").option("view", "records").load(CAPTURE)
    markers = records.limit(3).withColumn("is_control", F.lit(True))
    aborted = records.where("direction = 'fetch'").limit(2).withColumn("is_aborted", F.lit(True))
    with_both = records.unionByName(markers).unionByName(aborted)
    assert compute_report(spark, exchanges, with_both).results == compute_report(spark, exchanges, records).results
