"""Shared fixtures: one local SparkSession per test worker (JVM start-up is the slow part)."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from kafka_protocol_source.spark.shared_names import DIRECTORY_VARIABLE

# CI runs the same examples every time (a property test there gates a merge; it does not explore):
# .ci/run sets HYPOTHESIS_PROFILE=ci. Locally each run draws new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_captures"

# Finished naming reads leave their names in files for other workers (spark.shared_names): a run of
# the tests keeps its own, and each test its own in this process (Spark's workers, started once,
# share the run's). Set before the SparkSession starts, so that its workers inherit it.
_SHARED_NAMES = Path(tempfile.mkdtemp(prefix="kafka-wire-test-names-"))
atexit.register(shutil.rmtree, _SHARED_NAMES, ignore_errors=True)
os.environ[DIRECTORY_VARIABLE] = str(_SHARED_NAMES / "workers")
_tests = itertools.count()


@pytest.fixture(autouse=True)
def _shared_names_of_its_own(monkeypatch):
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(_SHARED_NAMES / str(next(_tests))))


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors import the project from this venv
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafka-wire-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES
