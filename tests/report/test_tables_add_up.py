"""The report's per-api and per-client tables add up to every row its summary counts.

A capture of the broker's side only: some of its responses are of an api nothing tells (no
captured request, and none of their connection's layouts reads them), and its gap rows have none.
The text report's per-api and per-client tables left them out (57 of the 69 its header counted,
in the review's capture), and so did the HTML report's per-api table, while its per-client table
had them all (found by review, /tmp/ux1). They are now rows of their own, labelled with their
status.
"""

from __future__ import annotations

from kafka_protocol_source.cli.report import REPORT_QUERIES
from kafka_protocol_source.report.compute import compute_report
from tests.cuts import one_side, segments_of
from tests.samples.catalog import sample


def test_responses_of_no_known_api_are_counted_in_every_table(spark, tmp_path):
    from kafka_protocol_source.spark import register

    register(spark)
    s = sample("tansu_confluent_kafka_all_codecs")
    path = str(one_side(segments_of(s.path), s.broker_port).write(tmp_path / "broker_side.pcap"))
    exchanges = spark.read.format("kafka-wire").load(path)
    records = spark.read.format("kafka-wire").option("view", "records").load(path)
    total = exchanges.count()
    unknown = exchanges.where("api_name IS NULL").count()
    assert unknown > 0
    exchanges.createOrReplaceTempView("exchanges")
    try:
        for table in ("Requests per API", "Requests per client id"):
            rows = spark.sql(REPORT_QUERIES[table].format(top=10)).collect()
            assert sum(r["requests"] for r in rows) == total, table
        per_api = {r["api"]: r["requests"] for r in spark.sql(REPORT_QUERIES["Requests per API"]).collect()}
        assert per_api["(request_missing)"] > 0
        assert sum(n for api, n in per_api.items() if api.startswith("(")) == unknown
    finally:
        spark.catalog.dropTempView("exchanges")
    html = compute_report(spark, exchanges, records).results
    assert sum(r["exchanges"] for r in html["per_api"]) == total
    assert sum(r["exchanges"] for r in html["per_client"]) == total


def test_a_client_s_connections_are_counted_also_when_its_address_comes_again(spark, tmp_path):
    """The same session captured again later, on the same 4-tuples: each client id has twice the
    connections, from the same addresses (the review counted addresses: 3 for 1000 sessions)."""
    from kafka_protocol_source.spark import register
    from tests.cuts import Cut

    register(spark)
    s = sample("tansu_confluent_kafka_all_codecs")
    segments = segments_of(s.path)
    later = tuple(  # new initial sequence numbers: new connections, not copies of the first ones
        seg._replace(
            timestamp_ns=seg.timestamp_ns + 100 * 10**9,
            seq=(seg.seq + 10**6) & 0xFFFFFFFF,
            ack=(seg.ack + 10**6) & 0xFFFFFFFF,
        )
        for seg in segments
    )
    path = str(Cut(segments + later).write(tmp_path / "twice.pcap"))
    exchanges = spark.read.format("kafka-wire").load(path)
    exchanges.createOrReplaceTempView("exchanges")
    try:
        rows = spark.sql(REPORT_QUERIES["Requests per client id"].format(top=10)).collect()
        expected = spark.sql(
            "SELECT coalesce(client_id, '(none)') AS client_id, count(DISTINCT connection_id) AS n, "
            "count(DISTINCT client_address) AS addresses FROM exchanges GROUP BY 1"
        ).collect()
    finally:
        spark.catalog.dropTempView("exchanges")
    want = {r["client_id"]: r["n"] for r in expected}
    assert {r["client_id"]: r["connections"] for r in rows} == want
    assert all(r["n"] == 2 * r["addresses"] for r in expected if r["client_id"] != "(none)")
