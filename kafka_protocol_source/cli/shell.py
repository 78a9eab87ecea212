"""``kafka-wire shell``: queries from stdin, one per line, over one SparkSession.

Works typed (a prompt, line editing when readline is there) and piped (no prompt). A query
that fails prints its one-line error and the next line is read; the exit code is that of the
first failure, or 0.
"""

from __future__ import annotations

import sys

from .errors import OK, describe
from .output import Destination, write

HELP = ("views: exchanges (one row per request/response; traffic is the same view), records (one row "
        "per record). One query per line, e.g. SELECT api_name, count(*) FROM exchanges GROUP BY 1; "
        "DESCRIBE exchanges; quit to leave.")
_QUIT = frozenset({"quit", "exit", "\\q"})


def run_shell(spark, stdin, stdout, stderr, fmt: str, max_rows: int, progress) -> int:
    interactive = stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401, PLC0415 - line editing and history for input()
        except ImportError:
            pass
        stderr.write(HELP + "\n")
    first_failure = OK
    for line in _lines(stdin, interactive, stderr):
        query = line.strip().rstrip(";").strip()
        if not query or query.startswith("--"):
            continue
        if query.lower() in _QUIT:
            break
        if query.lower() in ("help", "\\?"):
            stderr.write(HELP + "\n")
            continue
        try:
            df = spark.sql(query)
            with progress.paused():
                write(df, Destination(fmt), stdout, max_rows)
        except Exception as e:  # noqa: BLE001 - one line per failed query, then the next one
            failure = describe(e)
            stdout.flush()
            stderr.write(f"kafka-wire: {failure.message}\n")
            stderr.flush()
            first_failure = first_failure or failure.code
    return first_failure


def _lines(stdin, interactive: bool, stderr):
    if not interactive:
        yield from stdin
        return
    while True:
        try:
            yield input("kafka-wire> ") if stdin is sys.stdin else _prompted(stdin, stderr)
        except EOFError:
            stderr.write("\n")
            return


def _prompted(stdin, stderr) -> str:
    stderr.write("kafka-wire> ")
    stderr.flush()
    line = stdin.readline()
    if not line:
        raise EOFError
    return line
