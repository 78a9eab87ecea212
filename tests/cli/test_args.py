"""The command line, checked without starting Spark."""

from __future__ import annotations

import pytest

from kafka_protocol_source.cli.args import parse_command, split_paths_and_queries
from kafka_protocol_source.cli.errors import UsageError
from kafka_protocol_source.cli.output import PARQUET, Destination


def test_paths_then_queries(tmp_path):
    capture = tmp_path / "with space.pcap"
    capture.write_bytes(b"")
    args = [str(capture), "captures/*.pcap", "SELECT 1", "SHOW TABLES"]
    assert split_paths_and_queries(args) == ([str(capture), "captures/*.pcap"], ["SELECT 1", "SHOW TABLES"])


def test_a_single_query_without_spaces_is_still_the_last_argument():
    assert split_paths_and_queries(["a.pcap", "b.pcap", "q"]) == (["a.pcap", "b.pcap"], ["q"])


def test_a_path_with_a_space_is_a_path_even_mistyped(tmp_path):
    (tmp_path / "my caps").mkdir()
    (tmp_path / "my caps" / "a.pcap").write_bytes(b"")
    glob_, typo = str(tmp_path / "my caps" / "*.pcap"), str(tmp_path / "my capz")
    assert split_paths_and_queries([glob_, typo, "select count(*) FROM exchanges"]) == (
        [glob_, typo],
        ["select count(*) FROM exchanges"],
    )
    assert split_paths_and_queries(["my capz", "(SELECT 1)", "-- x\nSHOW TABLES"]) == (
        ["my capz"],
        ["(SELECT 1)", "-- x\nSHOW TABLES"],
    )


def test_a_mistyped_capture_name_that_starts_like_a_statement_is_a_path():
    assert split_paths_and_queries(["table 1.pcap", "show 2.PCAPNG", "Select  x.pcap.gz", "TABLE exchanges"]) == (
        ["table 1.pcap", "show 2.PCAPNG", "Select  x.pcap.gz"],
        ["TABLE exchanges"],
    )


def test_a_query_that_ends_as_a_capture_name_does_is_still_a_query():
    queries = [
        "SELECT count(*) FROM exchanges -- as in before.pcap",
        "SELECT * FROM exchanges e ORDER BY e.cap",
        "SELECT 2",
    ]
    assert split_paths_and_queries(["x.pcap", *queries]) == (["x.pcap"], queries)


def test_a_path_after_a_query_is_named(tmp_path):
    capture = tmp_path / "late.pcap"
    capture.write_bytes(b"")
    with pytest.raises(UsageError, match=r"'.*late\.pcap' is a path after a query: give the paths first"):
        split_paths_and_queries(["a.pcap", "SELECT 1", str(capture)])


@pytest.mark.parametrize("args", [["SELECT 1"], ["only.pcap"]])
def test_sql_needs_a_path_and_a_query(args):
    with pytest.raises(UsageError, match="sql needs one or more paths, then one or more queries"):
        split_paths_and_queries(args)


def test_one_output_per_query():
    command = parse_command(["sql", "a.pcap", "SELECT 1", "SELECT 2", "--output", "-", "--output", "x.parquet"])
    assert command.queries == ["SELECT 1", "SELECT 2"]
    assert command.destinations == [Destination("table"), Destination(PARQUET, "x.parquet")]
    with pytest.raises(UsageError, match="2 queries and 1 --output: give one --output per query"):
        parse_command(["sql", "a.pcap", "SELECT 1", "SELECT 2", "--output", "x.csv"])


def test_options_reach_the_reader():
    command = parse_command(["report", "a.pcap", "--ports", "9093", "--option", "mode=FAILFAST", "--specs", "s"])
    assert command.options == {"ports": "9093", "specs": "s", "mode": "FAILFAST"}
    with pytest.raises(UsageError, match="write KEY=VALUE"):
        parse_command(["report", "a.pcap", "--option", "mode"])
    with pytest.raises(UsageError) as info:
        parse_command(["report", "a.pcap", "--option", "VIEW=records"])
    assert str(info.value) == (
        "--option view: the command registers every view, exchanges (or traffic), records, connections, groups "
        "and lag: name one in the query"
    )


def test_sql_help_names_every_view(capsys):
    with pytest.raises(SystemExit):
        parse_command(["--help"])
    assert "run SQL over the views exchanges (or traffic), records, connections, groups and lag" in " ".join(
        capsys.readouterr().out.split()
    )


def test_bad_flags_exit_2_with_the_closest_flag(capsys):
    with pytest.raises(SystemExit) as info:
        parse_command(["sql", "a.pcap", "SELECT 1", "--fromat", "csv"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert (
        err.strip() == "kafka-wire sql: unrecognized arguments: --fromat csv (did you mean --format?) "
        "(see kafka-wire sql --help)"
    )


@pytest.mark.parametrize(
    ("argv", "paths", "queries"),
    [
        (["sql", "a/", "--ports", "9093", "SELECT count(*) FROM t"], ["a/"], ["SELECT count(*) FROM t"]),
        (["sql", "--ports", "9093", "a/", "SELECT 1", "--format", "csv", "SELECT 2"], ["a/"], ["SELECT 1", "SELECT 2"]),
        (["report", "a.pcap", "--ports", "9093", "b.pcap"], ["a.pcap", "b.pcap"], []),
        (["shell", "a.pcap", "--ports", "9093", "b.pcap"], ["a.pcap", "b.pcap"], []),
    ],
)
def test_options_may_come_between_paths_and_queries(argv, paths, queries):
    command = parse_command(argv)
    assert (command.paths, command.queries, command.options["ports"]) == (paths, queries, "9093")


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        parse_command(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == "kafka-wire 0.1.0"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--top", "0"], "--top must be 1 or more"),
        (["--top", "-1"], "--top must be 1 or more"),
        (["--html", "{tmp}/nodir/r.html"], "no directory"),
        (["--html", "{tmp}"], "is a directory"),
    ],
)
def test_report_flags_are_checked_before_spark_starts(tmp_path, flags, message):
    """Not after the whole report was printed (Spark's INVALID_LIMIT_LIKE_EXPRESSION, or the
    HTML file failing to open at the very end)."""
    with pytest.raises(UsageError, match=message):
        parse_command(["report", "x.pcap", *(f.format(tmp=tmp_path) for f in flags)])
    assert parse_command(["report", "x.pcap", "--top", "1", "--html", str(tmp_path / "r.html")]).top == 1


def test_the_report_is_a_table_or_json():
    assert parse_command(["report", "x.pcap"]).format == "table"
    assert parse_command(["report", "x.pcap", "--format", "json"]).format == "json"
    with pytest.raises(SystemExit):  # csv: a report is several tables
        parse_command(["report", "x.pcap", "--format", "csv"])


def test_an_output_that_cannot_be_written_is_said_before_spark_starts(tmp_path):
    """A Parquet directory already holding files, or a file in a folder that does not exist,
    failed after Spark had started and the queries before it had been printed."""
    full = tmp_path / "records.parquet"
    full.mkdir()
    (full / "part-0.parquet").write_bytes(b"")
    with pytest.raises(UsageError, match="the directory exists and is not empty"):
        parse_command(["sql", "a.pcap", "SELECT 1", "--output", str(full)])
    with pytest.raises(UsageError, match="no directory"):
        parse_command(["sql", "a.pcap", "SELECT 1", "--output", str(tmp_path / "nowhere" / "out.csv")])
    empty = tmp_path / "empty"
    empty.mkdir()
    command = parse_command(["sql", "a.pcap", "SELECT 1", "--output", str(empty)])
    assert command.destinations == [Destination(PARQUET, str(empty))]
