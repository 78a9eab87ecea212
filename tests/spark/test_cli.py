"""The kafka-wire command, run in subprocesses (it stops its SparkSession; the shared one stays up)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest

from kafka_protocol_source.cli import REPORT_QUERIES
from kafka_protocol_source.spec.registry import DEFAULT_SPECS

from .expected import TANSU_CONFLUENT, exchanges


KRAMMAR = DEFAULT_SPECS / "kafka.krammar"
SQL = ("SELECT (SELECT count(*) FROM traffic WHERE api_name = 'Produce') AS produce_requests, "
       "(SELECT count(*) FROM records WHERE direction = 'produce') AS produced_records")


def start(*args):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen([sys.executable, "-m", "kafka_protocol_source.cli", *args, "--master", "local[1]"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(process) -> subprocess.CompletedProcess:
    out, err = process.communicate(timeout=240)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.fixture(scope="module")
def commands():
    """Each command once, one after the other (a JVM each; run together they only compete for the cores)."""
    report = finish(start("report", str(TANSU_CONFLUENT)))
    # sql decodes with the krammar rendering of the specs: the same answers prove --specs reached the reader
    return {"report": report, "sql": finish(start("sql", str(TANSU_CONFLUENT), SQL, "--specs", str(KRAMMAR)))}


@pytest.fixture(scope="module")
def report(commands):
    return commands["report"]


def test_report_prints_every_section(report):
    assert report.returncode == 0, report.stderr[-3000:]
    out = report.stdout
    n = len(exchanges(TANSU_CONFLUENT))
    connections = len({e.connection_id for e in exchanges(TANSU_CONFLUENT)})
    assert f"{n} exchanges on {connections} connections" in out
    for title in REPORT_QUERIES:
        assert f"== {title} ==" in out
    per_api = Counter(e.api_name for e in exchanges(TANSU_CONFLUENT))
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    for api, count in per_api.items():
        assert lines[api][1] == str(count), (api, lines.get(api))
    assert "kw.confluent_kafka" in out  # top topics by records


def test_sql_runs_a_query_over_traffic_and_records(commands):
    result = commands["sql"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "produce_requests" in result.stdout and "produced_records" in result.stdout
    values = result.stdout.splitlines()[3].strip("|").split("|")
    assert [v.strip() for v in values] == ["5", "30"]


def test_without_java_one_clear_line_and_exit_code_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # an empty folder: no java on the PATH (Python is started by full path)
    result = subprocess.run([sys.executable, "-m", "kafka_protocol_source.cli", "report", str(TANSU_CONFLUENT)],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs Java" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_specs_file_is_one_line_naming_line_and_column(tmp_path):
    bad = tmp_path / "bad.krammar"
    bad.write_text("FooRequest => key 0, max version 1\n  Field: int33\n\nFooResponse =>\n  X: int8\n")
    result = subprocess.run([sys.executable, "-m", "kafka_protocol_source.cli", "report", str(TANSU_CONFLUENT),
                             "--specs", str(bad)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == f"kafka-wire: --specs: {bad}:2:10: unknown type 'int33' " \
                                    "(named structs must be defined before they are used)"
