"""``kafka-wire``: checks the command line, starts Spark, runs the command, turns failures into exit codes.

Everything that can be checked without a JVM (flags, read options, specs, paths, Java itself) is
checked first, so a mistake costs no Spark start. Exit codes are in ``errors.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from functools import partial

from ..views.topic_names import TOPIC_NAMES
from .args import Command, parse_command
from .errors import FAILED, NO_KAFKA, OK, STDOUT_CLOSED, USAGE, UsageError, describe
from .output import write
from .progress import InputSize, NoProgress, ProgressPrinter, spark_stages
from .report import print_report
from .session import SessionError, start_session
from .shell import run_shell
from .views import duplicates, no_kafka_message, register_views, summarize


def main(argv: list[str] | None = None) -> int:
    try:
        command = parse_command(argv)
        size, files = _check_before_spark(command)
    except UsageError as e:
        _fail(str(e))
        return USAGE
    except NothingToRead as e:
        _fail(str(e))
        return NO_KAFKA
    _use_utc()
    try:
        spark, jvm_log = start_session(command.master, command.verbose)
    except SessionError as e:
        _fail(f"{e}: {e.__cause__}")
        for line in e.log_tail:
            sys.stderr.write(f"  {line}\n")
        return FAILED
    progress_dir = tempfile.mkdtemp(prefix="kafka-wire-progress-") if command.progress else None
    progress: ProgressPrinter | NoProgress = NoProgress().start()
    if progress_dir is not None:  # the tasks reading captures say there how far they are
        from ..spark.task_progress import stage_progress  # noqa: PLC0415 - imports pyspark

        command = replace(command, options={**command.options, "progressDir": progress_dir})
        told = partial(stage_progress, progress_dir)
        progress = ProgressPrinter(sys.stderr, spark_stages(spark), size, told=told).start()
    try:
        return _run(spark, command, files, progress)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return STDOUT_CLOSED
    except Exception as e:  # noqa: BLE001 - every failure ends as one line and an exit code
        failure = describe(e)
        progress.stop()
        if command.verbose:
            traceback.print_exc()
        _fail(failure.message)
        if not failure.expected and jvm_log is not None:
            _fail("run again with --verbose for Spark's log and the Python traceback")
        return failure.code
    finally:
        progress.stop()
        spark.stop()
        if progress_dir is not None:
            shutil.rmtree(progress_dir, ignore_errors=True)


def _run(spark, command: Command, files: list[str], progress) -> int:
    # the report's queries (text and HTML) read no body: its exchanges are read without them
    register_views(spark, command.paths, _views_options(command), bodies=command.name != "report")
    summary = summarize(spark)  # reads the exchanges once; later queries use the cached view
    if summary.kafka == 0:
        message = no_kafka_message(command.paths, summary, command.options["ports"], files, _read_options(command))
        if command.name != "shell":
            progress.stop()
            _fail(message)
            return NO_KAFKA
        with progress.paused():
            sys.stderr.write(f"kafka-wire: warning: {message}\n")
    doubled = duplicates(spark) if summary.kafka else None
    if doubled is not None and doubled.exchanges:
        with progress.paused():
            sys.stderr.write(f"kafka-wire: warning: {doubled.warning()}\n")
    quiet = terminal_quiet(progress, sys.stdout)
    if command.name == "report":
        with progress.paused():
            sys.stderr.write(f"kafka-wire report: {', '.join(command.paths)}\n")
        print_report(spark, summary, command.top, sys.stdout, quiet, command.format)
        if command.html:
            from ..report import write_html_report  # noqa: PLC0415 - only --html needs it

            write_html_report(spark, spark.table("exchanges"), spark.table("records"), command.html, top=command.top)
            with progress.paused():
                sys.stderr.write(f"kafka-wire report: wrote {command.html}\n")
        return OK
    if command.name == "shell":
        return run_shell(spark, sys.stdin, sys.stdout, sys.stderr, command.format, command.max_rows, progress, quiet)
    for i, (query, destination) in enumerate(zip(command.queries, command.destinations, strict=True)):
        df = spark.sql(query)
        if i and destination.path is None:
            with quiet():
                sys.stdout.write("\n")
        write(df, destination, sys.stdout, command.max_rows, quiet)
    return OK


def terminal_quiet(progress, stdout):
    """What to hold while results go to ``stdout``: the progress line is paused if both share a terminal."""
    return progress.paused if stdout.isatty() else contextlib.nullcontext


def _check_before_spark(command: Command) -> tuple[InputSize, list[str]]:
    """Flags, options, specs, paths and Java; returns the input's size for the progress line, and
    its files."""
    if command.options.get("specs"):
        from ..spec.registry import registry_for  # noqa: PLC0415

        try:  # a definition error is one line naming line and column, not a JVM stack trace
            registry_for(command.options["specs"])
        except (OSError, ValueError) as e:
            raise UsageError(f"--specs: {e}") from e
    from ..spark.options import OptionError  # noqa: PLC0415 - imports pyspark (no JVM)
    from ..spark.partition_reader import plan_partitions  # noqa: PLC0415
    from ..spark.paths import expand  # noqa: PLC0415

    try:
        options = _read_options(command)
        files = expand(options.paths, options.recursive, options.glob_filter)
    except (OptionError, FileNotFoundError) as e:
        raise UsageError(str(e)) from e
    if not files:
        raise UsageError(f"no capture files in {', '.join(command.paths)}")
    _some_readable(command.paths, files, options)
    if not _java_available():
        raise UsageError(
            "Spark needs Java (17 or newer): install a JDK, e.g. "
            "'apt-get install openjdk-17-jre-headless', or set JAVA_HOME."
        )
    size = InputSize(
        len(files), sum(os.path.getsize(f) for f in files), len(plan_partitions(files, options.split_size))
    )
    return size, files


class NothingToRead(Exception):
    """No file given is a capture or a stream dump: said before Spark starts, with why."""


def _some_readable(paths: list[str], files: list[str], options) -> None:
    """Raises ``NothingToRead`` when no file is one the source reads (each would be a
    ``capture_error`` row), from their first bytes: a minute of Spark said that before."""
    from ..pipeline import CaptureOptions, unreadable  # noqa: PLC0415

    reading = CaptureOptions(max_frame_size=options.max_frame_size)
    why = {}
    for f in files:
        reason = unreadable(f, reading)
        if reason is None:
            return
        why[f] = reason
    if list(why) == paths:
        listed = "; ".join(why.values()) if len(why) == 1 else "; ".join(f"{f}: {r}" for f, r in why.items())
        raise NothingToRead(f"no Kafka traffic in {', '.join(paths)}: {listed}")
    listed = "; ".join(f"{f}: {reason}" for f, reason in list(why.items())[:3])
    more = f" (and {len(why) - 3} more files)" if len(why) > 3 else ""
    raise NothingToRead(f"no Kafka traffic in {', '.join(paths)}: no file is a capture: {listed}{more}")


def _read_options(command: Command):
    """The command's options as the source reads them (their names in any case, their values as it parses them)."""
    from ..spark.options import ReadOptions  # noqa: PLC0415 - imports pyspark (no JVM)

    return ReadOptions.parse({**command.options, "paths": _json_list(command.paths)})


def _json_list(paths: list[str]) -> str:
    import json  # noqa: PLC0415

    return json.dumps(paths)


def _java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return True
    return shutil.which("java") is not None


def _use_utc() -> None:
    """PySpark hands timestamps over as naive datetimes in the process's time zone: make it UTC."""
    os.environ["TZ"] = "UTC"
    time.tzset()


def _drop_stdout() -> None:
    """Nothing reads stdout any more: what is left in its buffer goes to /dev/null, so that the
    interpreter's flush at exit does not print a BrokenPipeError of its own."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _fail(message: str) -> None:
    sys.stderr.write(f"kafka-wire: {message}\n")
    sys.stderr.flush()


def _views_options(command: Command) -> dict:
    """The reader's options: ``sql`` queries that read ``topic_names`` ask for the column (it may
    read a capture twice, so a view has it only when asked; ``shell``: ``--option topicNames=true``)."""
    options = command.options
    asked = any(TOPIC_NAMES in query.lower() for query in command.queries)
    if asked and not any(key.lower() == "topicnames" for key in options):
        return {**options, "topicNames": "true"}
    return options
