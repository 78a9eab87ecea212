"""The command's SparkSession: quiet by default, Spark's own logs and progress bars with --verbose.

Quiet means: Spark's log4j at ERROR from the JVM's first line (a log4j2 configuration shipped
with the package, given to the driver JVM as it starts), no console progress bars, no web UI,
PySpark's JSON log records of query errors off (the command prints its own one-line message),
and the JVM's stderr (its start-up warnings, the Python workers' stderr) kept in a temporary file
instead of the terminal: ``JvmLog.tail()`` gives its last lines when Spark does not start.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from importlib import resources

LOG4J2_CONFIG = "log4j2.properties"
# PySpark logs every captured query error as a JSON record on these loggers (pyspark/errors/exceptions/base.py)
PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class JvmLog:
    """The JVM's stderr, in an anonymous temporary file the JVM writes to."""

    TAIL_BYTES = 64 * 1024

    def __init__(self):
        self.file = tempfile.TemporaryFile()

    def tail(self, n: int = 20) -> list[str]:
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - self.TAIL_BYTES)
        text = os.pread(fd, size - start, start).decode("utf-8", "replace")  # pread: the JVM's offset stays
        return text.splitlines()[-n:]


class SessionError(RuntimeError):
    def __init__(self, message: str, log_tail: list[str]):
        super().__init__(message)
        self.log_tail = log_tail


def start_session(master: str, verbose: bool):
    """Start Spark; returns (spark, jvm_log) with ``jvm_log`` None when the JVM writes to the terminal."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext  # noqa: PLC0415 - the JVM starts only once Java is known to be there
    from pyspark.java_gateway import launch_gateway  # noqa: PLC0415
    from pyspark.sql import SparkSession  # noqa: PLC0415

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName("kafka-wire")
        .set("spark.sql.session.timeZone", "UTC")
        .set("spark.sql.python.filterPushdown.enabled", "true")
        .set("spark.ui.showConsoleProgress", "true" if verbose else "false")
        .set("spark.ui.enabled", "true" if verbose else "false")
    )
    jvm_log = None
    popen_kwargs = {}
    if not verbose:
        conf.set("spark.driver.extraJavaOptions", f'"-Dlog4j2.configurationFile={_log4j2_config()}"')
        jvm_log = JvmLog()
        popen_kwargs["stderr"] = jvm_log.file
        _quiet_pyspark_error_logs()
    try:
        SparkContext(conf=conf, gateway=launch_gateway(conf, popen_kwargs=popen_kwargs))
        spark = SparkSession.builder.getOrCreate()
    except Exception as e:
        raise SessionError("Spark did not start", jvm_log.tail() if jvm_log else []) from e
    from ..spark import register  # noqa: PLC0415

    register(spark)  # also when pyspark_kafka_wire is not importable by Spark's discovery
    return spark, jvm_log


def _log4j2_config() -> str:
    path = resources.files(__package__) / LOG4J2_CONFIG
    return str(path)


def _quiet_pyspark_error_logs() -> None:
    from pyspark.logger import PySparkLogger  # noqa: PLC0415

    for name in PYSPARK_ERROR_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)
