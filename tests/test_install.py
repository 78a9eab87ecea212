"""Installed as the README says, the source is found by Spark's own discovery: regular and editable.

PySpark registers data sources by scanning ``pkgutil.iter_modules()`` for ``pyspark_*`` modules
(pyspark/sql/worker/lookup_data_sources.py). An install that provides modules only through an
import hook (setuptools' editable finder) is invisible to that scan: ``format("kafka-wire")`` then
fails with DATA_SOURCE_NOT_FOUND. So this test installs a copy of the project into a fresh
virtual environment (no system site-packages; pip's cache and local index, no other network),
first with the README's first set-up block as written (a regular install, then its report), then
with the install of its second block (editable, with the test extras), and after each reads a
capture with ``format("kafka-wire")`` without calling ``register``. The checks run from a
directory outside the project: from its root, the working directory on ``sys.path`` would find
the module whatever the install did. One environment serves both installs (~2 minutes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_readme import SETUP_MARK, setup_blocks

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_captures" / "tansu_confluent_kafka_all_codecs.pcap"
SAMPLE_EXCHANGES = 69  # the capture's golden file has one line per exchange
_NOT_COPIED = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    "spark-warehouse",
    "benchmarks",
)

DISCOVER = """
import sys
import kafka_protocol_source
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print("package", kafka_protocol_source.__file__)
print("exchanges", spark.read.format("kafka-wire").load(sys.argv[1]).count())
spark.stop()
"""


def clean_env() -> dict:
    """This test run's environment minus what points Spark or Python at the outer installation."""
    drop = {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    outer_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != outer_bin)
    return env


def run(command, cwd: Path, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    stderr = "\n".join(line for line in result.stderr.splitlines() if not line.startswith("\tat "))  # Java frames
    assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{stderr[-4000:]}"
    return result


def discover(project: Path, elsewhere: Path, env: dict) -> dict[str, str]:
    venv_bin = project / ".venv" / "bin"
    env = {**env, "PATH": f"{venv_bin}{os.pathsep}{env['PATH']}"}  # Spark starts workers as python3
    result = run([str(venv_bin / "python"), "-c", DISCOVER, str(SAMPLE)], elsewhere, env)
    return dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("package", "exchanges")))


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="Spark needs Java")
def test_spark_finds_the_source_after_a_regular_and_an_editable_install(tmp_path):
    project, elsewhere = tmp_path / "kafka-wire", tmp_path / "elsewhere"
    shutil.copytree(ROOT, project, ignore=_NOT_COPIED)
    elsewhere.mkdir()
    env = clean_env()
    regular, editable = setup_blocks()

    report = run(["bash", "-euo", "pipefail", "-c", regular], project, env)  # as written: venv, install, report
    assert "== Requests per API ==" in report.stdout
    found = discover(project, elsewhere, env)
    assert found["exchanges"] == str(SAMPLE_EXCHANGES)
    assert "site-packages" in found["package"]  # the installed copy, not the sources

    install = editable.split("&& python -m pytest")[0]  # the block's install; its tests are this run
    assert SETUP_MARK in install and "pip install -q -e" in install
    run(["bash", "-euo", "pipefail", "-c", install], project, env)
    found = discover(project, elsewhere, env)
    assert found["exchanges"] == str(SAMPLE_EXCHANGES)
    assert found["package"] == str(project / "kafka_protocol_source" / "__init__.py")  # the sources themselves
