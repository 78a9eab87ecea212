"""The views the command registers: ``report`` reads the exchanges without their bodies.

The report's queries never read ``request`` or ``response``, so its exchanges view leaves them
out (no VARIANT encoding, nothing of them cached). Checked in the test session, against the view
with bodies: the same rows in every other column, and the same answers to every report query.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from chispa import assert_df_equality

from kafka_protocol_source.cli import REPORT_QUERIES
from kafka_protocol_source.cli.app import _run, _views_options
from kafka_protocol_source.cli.args import parse_command
from kafka_protocol_source.cli.progress import NoProgress
from kafka_protocol_source.cli.views import (
    ALIASES,
    DERIVED,
    EXCHANGES,
    RECORDS,
    duplicates,
    register_views,
    summarize,
)
from kafka_protocol_source.report.queries import NOT_FINE
from kafka_protocol_source.views.exchanges import BODY_COLUMNS
from kafka_protocol_source.views.topic_names import TOPIC_NAMES

from ..framing.kafkaflow import (
    Conversation,
    metadata_v1_request,
    metadata_v1_response,
    produce_v3_request,
)
from .expected import MOCK_AIOKAFKA, TANSU_CONFLUENT, TANSU_REJECTED

PATHS = [str(MOCK_AIOKAFKA), str(TANSU_REJECTED)]


@pytest.fixture
def registered(spark):
    """Registers the views as ``register_views`` does for ``bodies``; the session's views are dropped after."""

    def register(bodies: bool):
        register_views(spark, PATHS, {"ports": "9092"}, bodies=bodies)
        exchanges = spark.table(EXCHANGES)
        answers = {title: spark.sql(query.format(top=10)).collect() for title, query in REPORT_QUERIES.items()}
        return exchanges, answers

    yield register
    _drop(spark)


def _register_capture(spark, path, conversation: Conversation) -> None:
    """The report's views of ``conversation``, written as a capture at ``path``."""
    path.write_bytes(conversation.pcap())
    register_views(spark, [str(path)], {"ports": "9092"}, bodies=False)


def _drop(spark):
    for view in (EXCHANGES, RECORDS, *ALIASES, *DERIVED):
        spark.catalog.dropTempView(view)


def test_without_bodies_the_exchanges_view_is_the_same_but_for_them(registered):
    full, full_answers = registered(bodies=True)
    full = full.unpersist().drop(*BODY_COLUMNS, TOPIC_NAMES)  # read again without the cache: each read stands alone
    slim, slim_answers = registered(bodies=False)
    assert {*BODY_COLUMNS, TOPIC_NAMES} & set(slim.columns) == set()
    assert slim.columns == full.columns
    assert slim.count() > 50
    assert_df_equality(slim, full, ignore_row_order=True)
    assert slim_answers == full_answers
    assert all(full_answers.values())  # every section has rows: each comparison compares something


@pytest.mark.parametrize(
    ("argv", "bodies"),
    [(["report"], False), (["sql", "SELECT count(*) AS n FROM exchanges"], True)],
    ids=["report", "sql"],
)
def test_only_report_leaves_the_bodies_out(spark, argv, bodies, capsys):
    # run as the command runs once Spark is up, in the test session (``main`` would stop it)
    command = parse_command([argv[0], *PATHS, *argv[1:]])
    try:
        assert _run(spark, command, PATHS, NoProgress()) == 0
        assert (set(BODY_COLUMNS) <= set(spark.table(EXCHANGES).columns)) is bodies
        assert spark.table(EXCHANGES).count() > 50
    finally:
        spark.table(EXCHANGES).unpersist()
        _drop(spark)
    assert capsys.readouterr().out  # the command printed its answer


def test_the_terminal_report_counts_not_ok_as_the_html_report_does(spark, tmp_path):
    """A Produce with acks=0 has no answer by design (no_response): fine in both reports; a
    request left unanswered is not."""
    c = Conversation()
    c.request(produce_v3_request(1, acks=0))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(2))
    c.request(metadata_v1_request(3))
    _register_capture(spark, tmp_path / "acks0.pcap", c)
    try:
        statuses = sorted(r.status for r in spark.table(EXCHANGES).collect())
        assert statuses == ["no_response", "ok", "unanswered"]
        summary = summarize(spark)
        assert (summary.not_ok, summary.error_responses) == (1, 0)
        assert summary.describe().endswith("; 1 not ok: 1 unanswered")
        listed = spark.sql(REPORT_QUERIES["Exchanges that are not ok"]).collect()
        assert [(r.outcome, r.api, r.exchanges) for r in listed] == [("unanswered", "Metadata", 1)]
        html = spark.sql(f"SELECT count_if({NOT_FINE}) AS n FROM {EXCHANGES}").first().n
        assert html == 1
    finally:
        _drop(spark)


def test_the_report_starts_at_the_first_exchange_seen_also_a_response_without_its_request(spark, tmp_path):
    """A capture joined mid-session opens with answers whose requests it missed: the report's
    time range starts at them, not at the first request captured."""
    c = Conversation()
    c.response(metadata_v1_response(2))  # its request was sent before the capture began
    c.request(metadata_v1_request(3))
    c.response(metadata_v1_response(3))
    _register_capture(spark, tmp_path / "late.pcap", c)
    try:
        rows = sorted(spark.table(EXCHANGES).collect(), key=lambda r: r.correlation_id)
        assert [(r.status, r.request_time is None) for r in rows] == [("request_missing", True), ("ok", False)]
        summary = summarize(spark)
        assert summary.first == rows[0].response_time < rows[1].request_time
        assert summary.last == rows[1].response_time
        # answered, though its request is not there: not "unanswered"
        assert summary.describe().endswith("; 1 not ok: 1 answers whose request the capture does not have")
    finally:
        _drop(spark)


def test_two_files_of_the_same_traffic_are_read_once_and_said_to_count_it_twice_when_read_apart(spark, tmp_path):
    """One file per interface, or one per host, overlapping in time: one capture, read as their
    merge, each exchange once. Read as captures of their own (``stitch=false``), both count every
    exchange, and the commands say so. Pieces of one rotated capture say nothing."""
    import shutil

    from tests.cuts import pieces, segments_of

    for name in ("eth0.pcap", "lo.pcap"):
        shutil.copyfile(MOCK_AIOKAFKA, tmp_path / name)
    files = [str(tmp_path / "eth0.pcap"), str(tmp_path / "lo.pcap")]
    kafka = "api_key IS NOT NULL AND request_time IS NOT NULL"
    register_views(spark, [str(MOCK_AIOKAFKA)], {}, bodies=False)
    try:
        once = spark.table(EXCHANGES).where(kafka).count()
    finally:
        _drop(spark)
    register_views(spark, files, {}, bodies=False)
    try:
        assert spark.table(EXCHANGES).where(kafka).count() == once > 50
        assert duplicates(spark).exchanges == 0
    finally:
        _drop(spark)
    register_views(spark, files, {"stitch": "false"}, bodies=False)
    try:
        found = duplicates(spark)
        assert found.exchanges == once == spark.table(EXCHANGES).where(kafka).count() // 2
        assert (found.first_file, found.second_file) == tuple(files)
        assert "same traffic, and every count has it twice" in found.warning()
    finally:
        _drop(spark)
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    for n, piece in enumerate(pieces(segments_of(MOCK_AIOKAFKA), 4)):
        piece.write(rotated / f"part{n}.pcap")
    register_views(spark, [str(rotated)], {}, bodies=False)
    try:
        assert spark.table(EXCHANGES).select("capture_file").distinct().count() == 4
        assert duplicates(spark).exchanges == 0
    finally:
        _drop(spark)


def test_the_not_ok_table_lists_every_error_name_of_a_group_not_one(spark):
    """Six Produces refused UNSUPPORTED_VERSION and four UNKNOWN_PRODUCER_ID are one group: its
    example named one of the two; other outcomes keep their error text."""
    rows = [_not_ok("error_response", "Produce", None, ["UNSUPPORTED_VERSION"])] * 6
    rows += [_not_ok("error_response", "Produce", None, ["UNKNOWN_PRODUCER_ID"])] * 4
    rows += [_not_ok("malformed", "Metadata", "1 bytes left after the response body", None)]
    spark.createDataFrame(rows, _NOT_OK_COLUMNS).createOrReplaceTempView(EXCHANGES)
    try:
        listed = spark.sql(REPORT_QUERIES["Exchanges that are not ok"]).collect()
        assert [(r.outcome, r.api, r.exchanges, r.example) for r in listed] == [
            ("error_response", "Produce", 10, "UNKNOWN_PRODUCER_ID, UNSUPPORTED_VERSION"),
            ("malformed", "Metadata", 1, "1 bytes left after the response body"),
        ]
    finally:
        _drop(spark)


_NOT_OK_COLUMNS = (
    "outcome string, api_name string, error string, error_names array<string>, capture_file string,"
    " client_id string, client_address string, request_time timestamp, response_time timestamp"
)


def _not_ok(outcome, api, error, names, capture_file="/captures/a.pcap", client_id="app", at=None):
    sent = datetime(2026, 11, 27, 12, 0, at or 0, tzinfo=timezone.utc) if api else None
    return (outcome, api, error, names, capture_file, client_id, "10.0.0.1:5000" if api else None, sent, sent)


def test_the_not_ok_table_says_who_and_when_and_names_each_file_that_did_not_read(spark):
    """Which clients, first and last time per group; capture errors one row per file, naming it
    (two bad files of a folder were one row, with one example and neither name)."""
    rows = [
        _not_ok("error_response", "Produce", None, ["UNKNOWN_PRODUCER_ID"], client_id=c, at=n)
        for n, c in enumerate(["p1", "p2", "p3", "p4", "p5", "p1"])
    ]
    rows += [_not_ok("unanswered", "Fetch", "no response", None, client_id=None, at=30)]
    rows += [_not_ok("capture_error", None, "not a pcap", None, "/captures/notes.log", None)]
    rows += [_not_ok("capture_error", None, "compressed stream ends early", None, "/captures/b.pcap.gz", None)]
    spark.createDataFrame(rows, _NOT_OK_COLUMNS).createOrReplaceTempView(EXCHANGES)
    try:
        listed = spark.sql(REPORT_QUERIES["Exchanges that are not ok"]).collect()
        assert [(r.outcome, r.api, r.exchanges, r.first, r.last, r.seen_in, r.example) for r in listed] == [
            (
                "error_response",
                "Produce",
                6,
                "2026-11-27 12:00:00",
                "2026-11-27 12:00:05",
                "p1, p2, p3, +2 more",
                "UNKNOWN_PRODUCER_ID",
            ),
            ("capture_error", "-", 1, None, None, "b.pcap.gz", "compressed stream ends early"),
            ("capture_error", "-", 1, None, None, "notes.log", "not a pcap"),
            ("unanswered", "Fetch", 1, "2026-11-27 12:00:30", "2026-11-27 12:00:30", "10.0.0.1:5000", "no response"),
        ]
    finally:
        _drop(spark)


@pytest.mark.parametrize(
    ("query", "option", "asked"),
    [
        ("SELECT api_name, count(*) FROM exchanges GROUP BY 1", None, None),
        ("SELECT topic_names FROM exchanges WHERE api_name = 'Fetch'", None, "true"),
        ("SELECT TOPIC_NAMES FROM traffic", "false", "false"),  # (the user's word stands)
    ],
)
def test_sql_asks_for_topic_names_where_a_query_reads_them(query, option, asked):
    argv = ["sql", "a.pcap", query] + (["--option", f"topicNames={option}"] if option else [])
    options = _views_options(parse_command(argv))
    assert {k.lower(): v for k, v in options.items()}.get("topicnames") == asked


def test_a_sql_query_names_the_fetched_topics(spark, capsys):
    command = parse_command(
        [
            "sql",
            str(TANSU_CONFLUENT),
            "SELECT api_name, count(*) AS n, collect_set(map_values(topic_names)[0]) AS topics FROM exchanges "
            "WHERE topic_names IS NOT NULL GROUP BY 1 ORDER BY 1",
            "--format",
            "csv",
        ]
    )
    try:
        assert _run(spark, command, command.paths, NoProgress()) == 0
    finally:
        spark.table(EXCHANGES).unpersist()
        _drop(spark)
    assert capsys.readouterr().out.splitlines() == [
        "api_name,n,topics",
        'Fetch,6,"[""kw.confluent_kafka""]"',
        'Metadata,9,"[""kw.confluent_kafka""]"',
    ]
