"""The kafka-wire command, run in subprocesses (it stops its SparkSession; the shared one stays up).

Each run that starts Spark costs a JVM, so the runs are few and each is checked for several
things: ``report`` (sections, counts, error responses as not ok), ``sql`` (several queries, every
output format, the row-count message, --specs), ``shell`` (piped queries, an analysis error),
FAILFAST, a file that is not a capture, and --verbose. Every run in the default mode must leave
stderr free of Spark's log. Mistakes found before Spark starts are checked without a JVM.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from kafka_protocol_source.cli import REPORT_QUERIES
from kafka_protocol_source.cli.errors import STDOUT_CLOSED, USAGE
from kafka_protocol_source.cli.progress import NoProgress
from kafka_protocol_source.cli.report import section_key
from kafka_protocol_source.cli.shell import run_shell
from kafka_protocol_source.spec.registry import DEFAULT_SPECS

from .expected import TANSU_CONFLUENT, TANSU_REJECTED, exchanges

KRAMMAR = DEFAULT_SPECS / "kafka.krammar"
SQL = (
    "SELECT (SELECT count(*) FROM traffic WHERE api_name = 'Produce') AS produce_requests, "
    "(SELECT count(*) FROM records WHERE direction = 'produce') AS produced_records"
)
SPARK_LOG = re.compile(r"WARN|log4j|\[Stage|Traceback|INFO")


def run(*args, stdin: str | None = None, spark: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    master = ["--master", "local[1]"] if spark else []
    return subprocess.run(
        [sys.executable, "-m", "kafka_protocol_source.cli", *args, *master],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def commands(out_dir):
    """Each command once, one after the other (a JVM each; run together they only compete for the cores)."""
    cut = out_dir / "cut.pcap"  # ends inside a packet record: a capture_error row
    cut.write_bytes(TANSU_CONFLUENT.read_bytes()[: TANSU_CONFLUENT.stat().st_size * 2 // 3])
    not_a_capture = out_dir / "notes.pcap"
    not_a_capture.write_text("these are my notes, not a capture\n")
    return {
        "report": run("report", str(TANSU_CONFLUENT), str(TANSU_REJECTED)),
        "report_json": run("report", str(TANSU_CONFLUENT), str(TANSU_REJECTED), "--format", "json"),
        # decoded with the krammar rendering of the specs: the same answers prove --specs reached the reader
        "sql": run(
            "sql",
            str(TANSU_CONFLUENT),
            "--specs",  # options may stand between the paths and the queries
            str(KRAMMAR),
            SQL,
            "SELECT api_name, correlation_id, error_codes, error_names, outcome, request FROM exchanges",
            "SELECT * FROM records",
            "SELECT * FROM exchanges",
            "SELECT api_name, correlation_id FROM exchanges ORDER BY api_name, correlation_id",
            "--max-rows",
            "5",
            "--output",
            "-",
            "--output",
            str(out_dir / "exchanges.csv"),
            "--output",
            str(out_dir / "records.json"),
            "--output",
            str(out_dir / "exchanges.parquet"),
            "--output",
            "-",
        ),
        "shell": run(
            "shell",
            str(TANSU_REJECTED),
            "--format",
            "json",
            stdin="\n".join(
                [
                    "SELECT api_nam FROM exchanges;",
                    "-- a comment, then a statement over three lines, over the old view name",
                    "SELECT outcome, count(*) AS n",
                    "FROM traffic -- ; in a comment ends nothing",
                    "GROUP BY outcome ORDER BY outcome; SELECT 'quit ends the input: this runs' AS x",
                    "quit",
                    "SELECT 'not run after quit' AS x;",
                ]
            )
            + "\n",
        ),
        "failfast": run("sql", str(cut), "SELECT count(*) FROM exchanges", "--option", "mode=FAILFAST"),
        "not_kafka": run("report", str(not_a_capture)),
        "verbose": run("sql", str(TANSU_REJECTED), "SELECT count(*) AS n FROM records", "--verbose"),
    }


@pytest.mark.parametrize("name", ["report", "sql", "shell", "failfast", "not_kafka"])
def test_stderr_has_no_spark_log(commands, name):
    stderr = commands[name].stderr
    assert not SPARK_LOG.search(stderr), stderr[-3000:]
    assert len(stderr.splitlines()) <= 1, stderr[-3000:]


def test_report_prints_every_section(commands):
    report = commands["report"]
    assert report.returncode == 0, report.stderr[-3000:]
    assert report.stderr == f"kafka-wire report: {TANSU_CONFLUENT}, {TANSU_REJECTED}\n"
    out = report.stdout
    both = exchanges(TANSU_CONFLUENT) + exchanges(TANSU_REJECTED)
    connections = len({e.connection_id for e in both})
    assert f"{len(both)} exchanges on {connections} connections" in out
    for title in REPORT_QUERIES:
        assert f"== {title} ==" in out
    section = out.split("== Requests per API ==")[1].split("==")[0]
    lines = {line.split()[0]: line.split() for line in section.splitlines() if line.split()}
    for api, count in Counter(e.api_name for e in both).items():
        assert lines[api][1] == str(count), (api, lines.get(api))
    assert "kw.confluent_kafka" in out  # top topics by records


def test_the_json_report_holds_what_the_table_does(commands):
    report = commands["report_json"]
    assert report.returncode == 0, report.stderr[-3000:]
    document = json.loads(report.stdout)
    assert list(document) == ["summary", *map(section_key, REPORT_QUERIES)]
    both = exchanges(TANSU_CONFLUENT) + exchanges(TANSU_REJECTED)
    summary = document["summary"]
    assert (summary["exchanges"], summary["not_ok"], summary["error_responses"]) == (len(both), 5, 5)
    assert summary["first"] == min(e.request_time for e in both).isoformat()  # UTC, "+00:00"
    per_api = {row["api"]: row for row in document["requests_per_api"]}
    assert {api: row["requests"] for api, row in per_api.items()} == Counter(e.api_name for e in both)
    assert per_api["Produce"]["error_codes"] == [{"code": 59, "name": "UNKNOWN_PRODUCER_ID"}]
    assert per_api["Produce"]["versions"] == sorted({e.api_version for e in both if e.api_name == "Produce"})
    not_ok = {(row["outcome"], row["api"]): row["exchanges"] for row in document["exchanges_that_are_not_ok"]}
    assert not_ok == {("error_response", "Produce"): 4, ("error_response", "JoinGroup"): 1}
    # the table's own numbers, row for row
    table = commands["report"].stdout.split("== Requests per client id ==")[1].split("==")[0]
    rows = [line.split() for line in table.strip().splitlines()[2:]]
    assert [[r["client_id"], str(r["requests"])] for r in document["requests_per_client_id"]] == [r[:2] for r in rows]


def test_report_counts_error_responses_as_not_ok(commands):
    """The rejected capture's Produce requests were all answered 59 UNKNOWN_PRODUCER_ID; a consumer's
    first JoinGroup is answered 79 MEMBER_ID_REQUIRED (KIP-394)."""
    refused = [
        e
        for e in exchanges(TANSU_REJECTED)
        if e.api_name == "Produce"
        and {p["error_code"] for r in e.response["responses"] for p in r["partition_responses"]} == {59}
    ]
    asked_for_id = [
        e for e in exchanges(TANSU_CONFLUENT) if e.api_name == "JoinGroup" and e.response["error_code"] == 79
    ]
    assert len(refused) == 4 and len(asked_for_id) == 1
    out = commands["report"].stdout
    assert "; 5 not ok: 5 answered with an error code\n" in out  # those 4 Produces and that JoinGroup
    per_api = out.split("== Requests per API ==")[1].split("==")[0]
    produce = next(line for line in per_api.splitlines() if line.startswith("Produce"))
    assert produce.split()[6] == "4" and "59 UNKNOWN_PRODUCER_ID" in produce  # not_ok, error codes
    not_ok = out.split("== Exchanges that are not ok ==")[1]
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"  # first, last
    producers = r"kw-producer-\w+, kw-producer-\w+, kw-producer-\w+, \+1 more"  # one refused Produce each
    refused = rf"^error_response\s+Produce\s+4\s+{when}\s+{when}\s+{producers}\s+UNKNOWN_PRODUCER_ID$"
    assert re.search(refused, not_ok, re.MULTILINE), not_ok
    joined = rf"^error_response\s+JoinGroup\s+1\s+{when}\s+{when}\s+kw-consumer\s+MEMBER_ID_REQUIRED$"
    assert re.search(joined, not_ok, re.MULTILINE), not_ok
    assert "(Fetch, JoinGroup, SyncGroup: the broker holds these until data comes" in per_api
    per_broker = out.split("== Requests per broker ==")[1].split("==")[0].strip().splitlines()
    assert per_broker[0].split() == [
        "broker",
        "requests",
        "connections",
        "clients",
        "p50_ms",
        "p99_ms",
        "not_ok",
        "error_names",
    ]
    total = int(re.search(r"^(\d+) exchanges on", out, re.MULTILINE).group(1))
    assert sum(int(line.split()[1]) for line in per_broker[2:]) == total, per_broker  # (header, rule, rows)
    per_client = out.split("== Requests per client id ==")[1].split("==")[0].strip().splitlines()
    assert per_client[0].split()[-2:] == ["not_ok", "error_names"]
    refusing = [line.split() for line in per_client if line.split()[-1] == "UNKNOWN_PRODUCER_ID"]
    assert sum(int(cells[-2]) for cells in refusing) == 4, per_client  # one refused Produce per producer
    # the 24 records of those Produce requests were sent and refused: not produced
    topics = out.split("== Top topics by records ==")[1].split("==")[0]
    header = topics.split()[: len(topics.strip().splitlines()[0].split())]
    rejected = next(dict(zip(header, line.split(), strict=True)) for line in topics.splitlines() if "legacy1" in line)
    assert (rejected["produced"], rejected["refused"]) == ("0", "24"), topics


def test_sql_runs_several_queries_into_every_format(commands, out_dir, spark):
    result = commands["sql"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    first, last = result.stdout.split("\n\n")
    assert first.splitlines()[0].split() == ["produce_requests", "produced_records"]
    assert first.splitlines()[2].split() == ["5", "30"] and first.splitlines()[3] == "(1 row)"

    n = len(exchanges(TANSU_CONFLUENT))
    shown = last.splitlines()
    assert len(shown) == 2 + 5 + 1
    assert shown[-1] == f"({n} rows, {n - 5} not shown: --max-rows 0 shows all, --format csv or json writes all)"

    with open(out_dir / "exchanges.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == n
    join = [r for r in rows if r["api_name"] == "JoinGroup" and r["error_codes"] != "[]"]
    assert join and all(
        json.loads(r["error_names"]) == ["MEMBER_ID_REQUIRED"]
        and json.loads(r["error_codes"]) == [79]
        and r["outcome"] == "error_response"
        for r in join
    )
    produce = next(r for r in rows if r["api_name"] == "Produce")
    assert json.loads(produce["request"])["topic_data"][0]["name"] == "kw.confluent_kafka"

    records = [json.loads(line) for line in (out_dir / "records.json").read_text().splitlines()]
    produced = [r for r in records if r["direction"] == "produce"]
    assert len(produced) == 30 and all(r["topic"] == "kw.confluent_kafka" for r in produced)

    parquet = spark.read.parquet(str(out_dir / "exchanges.parquet"))
    assert parquet.count() == n
    assert parquet.columns == spark.read.format("kafka-wire").load(str(TANSU_CONFLUENT)).columns


def test_shell_reads_piped_queries_and_goes_on_after_an_error(commands):
    result = commands["shell"]
    assert result.returncode == 2  # the first failure: a query that does not analyse
    error = result.stderr.strip()
    assert error.startswith("kafka-wire: [UNRESOLVED_COLUMN.WITH_SUGGESTION]") and "Did you mean" in error
    assert "`api_name`" in error and "\n" not in error
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    expected = Counter(
        "error_response" if e.status == "ok" and e.api_name == "Produce" else e.status
        for e in exchanges(TANSU_REJECTED)
    )
    assert rows == [{"outcome": k, "n": v} for k, v in sorted(expected.items())] + [
        {"x": "quit ends the input: this runs"}
    ]


def test_failfast_is_one_line_and_exit_code_1(commands):
    result = commands["failfast"]
    assert result.returncode == 1
    assert result.stdout == ""
    assert re.fullmatch(
        r"kafka-wire: \[MALFORMED_RECORD_IN_PARSING\] kafka-wire \(mode FAILFAST\): \S+"
        r"cut.pcap: packet \d+: capture_error: truncated_file at packet \d+ .*\n",
        result.stderr,
    )


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """``kafka-wire sql ... | head -1``: here the pipe is closed before any result is written."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    args = ["sql", str(TANSU_CONFLUENT), "SELECT * FROM exchanges", "--format", "json", "--master", "local[1]"]
    with subprocess.Popen(
        [sys.executable, "-m", "kafka_protocol_source.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as command:
        command.stdout.close()
        stderr = command.stderr.read()
        code = command.wait(timeout=300)
    assert (code, stderr) == (STDOUT_CLOSED, "")


class ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_the_shell_stops_reading_queries_when_its_results_have_no_reader(spark):
    stdin, stderr = io.StringIO("SELECT 1 AS x;\nSELECT 2 AS x;\n"), io.StringIO()
    with pytest.raises(BrokenPipeError):
        run_shell(spark, stdin, ClosedPipe(), stderr, "json", 10, NoProgress())
    assert (stderr.getvalue(), stdin.readline()) == ("", "SELECT 2 AS x;\n")


def test_a_statement_over_several_lines_that_fails_names_its_lines(spark):
    """Statements written one per line without ';' are one statement: its error says so."""
    stdin, stdout, stderr = io.StringIO("SELECT 1 AS x;\nSELECT 2 AS x\nSELECT 3 AS x;\n"), io.StringIO(), io.StringIO()
    assert run_shell(spark, stdin, stdout, stderr, "json", 10, NoProgress()) == USAGE
    assert stdout.getvalue() == '{"x": 1}\n'
    error = stderr.getvalue()
    assert error.startswith("kafka-wire: [PARSE_SYNTAX_ERROR]"), error
    assert error.endswith(" (the statement of lines 2-3: statements end with ';')\n"), error


def test_verbose_gives_spark_its_log_back(commands):
    result = commands["verbose"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "log4j" in result.stderr  # Spark's "Using Spark's default log4j profile" banner
    assert result.stdout.splitlines()[2].split() == ["24"]


def test_a_file_that_is_not_a_capture_exits_3(commands, out_dir):
    result = commands["not_kafka"]
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr.startswith(  # (said from its first bytes, before Spark starts)
        f"kafka-wire: no Kafka traffic in {out_dir / 'notes.pcap'}: not a pcap, pcapng or Kafka stream dump: "
        "not a pcap or pcapng capture (first bytes 74686573)"
    ), result.stderr


# -- mistakes found before Spark starts: no JVM -----------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["report", str(TANSU_CONFLUENT), "--option", "mdoe=FAILFAST"],
            "kafka-wire: unknown option 'mdoe': did you mean 'mode'?",
        ),
        (
            ["sql", str(TANSU_CONFLUENT), "SELECT 1", "--prots", "9092"],
            "kafka-wire sql: unrecognized arguments: --prots 9092 (did you mean --ports?) (see kafka-wire sql --help)",
        ),
        (
            ["sql", "no/such/capture.pcap", "SELECT 1"],
            "kafka-wire: [PATH_NOT_FOUND] Path does not exist: no/such/capture.pcap",
        ),
        (
            ["sql", str(TANSU_CONFLUENT), "SELECT 1", "--output", "a.csv", "--format", "json"],
            "kafka-wire: --output a.csv is written as csv, not as --format json",
        ),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_code_2(args, message):
    result = run(*args, spark=False)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")


def test_version():
    result = run("--version", spark=False)
    assert (result.returncode, result.stdout.strip()) == (0, "kafka-wire 0.1.0")


def test_without_java_one_clear_line_and_exit_code_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # an empty folder: no java on the PATH (Python is started by full path)
    result = subprocess.run(
        [sys.executable, "-m", "kafka_protocol_source.cli", "report", str(TANSU_CONFLUENT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs Java" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_specs_file_is_one_line_naming_line_and_column(tmp_path):
    bad = tmp_path / "bad.krammar"
    bad.write_text("FooRequest => key 0, max version 1\n  Field: int33\n\nFooResponse =>\n  X: int8\n")
    result = subprocess.run(
        [sys.executable, "-m", "kafka_protocol_source.cli", "report", str(TANSU_CONFLUENT), "--specs", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"kafka-wire: --specs: {bad}:2:10: unknown type 'int33' "
        "(named structs must be defined before they are used)"
    )
