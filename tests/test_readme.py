"""Every example in README.md runs as written.

The fenced blocks are taken from the README itself: ``python`` blocks run in the shared
SparkSession (as ``spark``), ``sql`` blocks statement by statement with ``spark.sql`` (split as
``kafka-wire shell`` splits them, so that they paste into it), and
``bash`` blocks with bash, in a directory holding ``captures/``; the views' ``sql`` examples,
indented in their list items, against their view of ``captures/``. ``captures/`` in the examples
stands for the reader's own capture directory: here it is a directory filled with two sample
captures; in Python and SQL (read by Spark workers, whose working directory is not the test's)
``captures/`` and ``sample_captures/`` are replaced by absolute paths. The set-up blocks (those
creating a virtual environment) are run by tests/test_install.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_protocol_source.cli.statements import StatementSplitter

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SAMPLES = ROOT / "sample_captures"
CAPTURES = ("tansu_confluent_kafka_all_codecs.pcap", "tansu_kafka_python_legacy_magic1_rejected.pcap")
SETUP_MARK = "python3 -m venv"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_INDENTED_SQL = re.compile(r"^ +```sql\n(.*?)^ +```", re.DOTALL | re.MULTILINE)
_CAPTURES = re.compile(r"(?<![\w/])captures/")  # not sample_captures/
SPARK_LOG = re.compile(r"WARN|log4j|\[Stage|Traceback")


def blocks(language: str | None = None) -> list[str]:
    found = [(lang, code) for lang, code in _BLOCK.findall(README.read_text())]
    return [code for lang, code in found if language is None or lang == language]


def setup_blocks() -> list[str]:
    return [b for b in blocks("bash") if SETUP_MARK in b]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A directory with ``captures/`` in it, as the examples assume."""
    work = tmp_path_factory.mktemp("readme")
    (work / "captures").mkdir()
    for name in CAPTURES:
        shutil.copy(SAMPLES / name, work / "captures" / name)
    return work


def absolute(code: str, work: Path) -> str:
    code = code.replace("sample_captures/", f"{SAMPLES}/")
    return _CAPTURES.sub(f"{work}/captures/", code)


def test_every_block_is_one_the_tests_run():
    languages = {lang for lang, _ in _BLOCK.findall(README.read_text())}
    assert languages <= {"python", "sql", "bash", ""}, languages  # "" is the layout drawing
    assert blocks("python") and blocks("sql") and len(setup_blocks()) == 2
    assert len(blocks("bash")) > len(setup_blocks())


@pytest.fixture
def own_temp_views(spark):
    before = {t.name for t in spark.catalog.listTables() if t.isTemporary}
    yield
    for table in spark.catalog.listTables():
        if table.isTemporary and table.name not in before:
            spark.catalog.dropTempView(table.name)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_examples(spark, workdir, own_temp_views, index, capsys):
    code = absolute(blocks("python")[index], workdir)
    exec(compile(code, f"README.md python block {index}", "exec"), {"spark": spark})  # noqa: S102


@pytest.mark.parametrize("index", range(len(blocks("sql"))))
def test_sql_examples(spark, workdir, own_temp_views, index):
    splitter = StatementSplitter()
    lines = absolute(blocks("sql")[index], workdir).splitlines()
    statements = [statement.text for line in lines for statement in splitter.feed(line)]
    assert statements and not splitter.pending  # each ended by its ';'
    for statement in statements:
        spark.sql(statement).collect()


@pytest.mark.parametrize("view", ["connections", "groups", "lag"])
def test_each_views_example_runs_on_the_captures(spark, workdir, own_temp_views, view):
    """The views' examples sit indented in their list items (which ``blocks`` does not take)."""
    [example] = [textwrap.dedent(b) for b in _INDENTED_SQL.findall(README.read_text()) if f"FROM {view}" in b]
    spark.read.format("kafka-wire").option("view", view).load(str(workdir / "captures")).createOrReplaceTempView(view)
    assert spark.sql(example).collect()


def test_the_groups_example_shows_the_members_of_a_generation_the_capture_joined_mid_way(spark, own_temp_views):
    from kafka_protocol_source.spark.view_schemas import GROUPS_VIEW
    from kafka_protocol_source.views.groups import group_rows
    from tests.views.groups_script import GroupScript

    script = GroupScript()
    script.heartbeat("A", "a-1", 7)  # no JoinGroup or SyncGroup: the assignment was never seen
    spark.createDataFrame(list(group_rows(script.exchanges)), GROUPS_VIEW).createOrReplaceTempView("groups")
    # the views' examples are indented in their list items, which blocks() does not take
    [example] = [b for b in _INDENTED_SQL.findall(README.read_text()) if "FROM groups" in b]
    [row] = spark.sql(example).collect()
    assert row.assignments and None not in row.assignments, row.assignments


@pytest.mark.parametrize("index", range(len([b for b in blocks("bash") if SETUP_MARK not in b])))
def test_command_line_examples(workdir, index):
    code = [b for b in blocks("bash") if SETUP_MARK not in b][index]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYSPARK_PYTHON": sys.executable,
    }
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()
    assert not SPARK_LOG.search(result.stderr), result.stderr[-3000:]
