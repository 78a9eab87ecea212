"""``kafka-wire shell``: queries from stdin, one per line, over one SparkSession.

Works typed (a prompt, line editing when readline is there) and piped (no prompt). A query
that fails prints its one-line error and the next line is read; the exit code is that of the
first failure, or 0. The progress line is paused while the prompt waits and while results or
errors are written to the terminal.
"""

from __future__ import annotations

import contextlib
import sys

from .errors import OK, describe
from .output import Destination, write
from .views import VIEW_LIST

HELP = (
    f"views: {VIEW_LIST}. One query per line, e.g. SELECT api_name, count(*) FROM exchanges GROUP BY 1; "
    "DESCRIBE exchanges; quit to leave."
)
PROMPT = "kafka-wire> "
_QUIT = frozenset({"quit", "exit", "\\q"})


def run_shell(spark, stdin, stdout, stderr, fmt: str, max_rows: int, progress, quiet=contextlib.nullcontext) -> int:
    interactive = stdin.isatty()
    if interactive:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401, PLC0415 - line editing and history for input()
        with progress.paused():
            stderr.write(HELP + "\n")
    first_failure = OK
    while True:
        with progress.paused():
            line = _read_line(stdin, stderr, interactive)
        if line is None:
            break
        query = line.strip().rstrip(";").strip()
        if not query or query.startswith("--"):
            continue
        if query.lower() in _QUIT:
            break
        if query.lower() in ("help", "\\?"):
            stderr.write(HELP + "\n")
            continue
        try:
            write(spark.sql(query), Destination(fmt), stdout, max_rows, quiet)
        except BrokenPipeError:
            raise  # nothing reads the results any more: no later query is either
        except Exception as e:  # noqa: BLE001 - one line per failed query, then the next one
            failure = describe(e)
            with progress.paused():
                stdout.flush()
                stderr.write(f"kafka-wire: {failure.message}\n")
                stderr.flush()
            first_failure = first_failure or failure.code
    return first_failure


def _read_line(stdin, stderr, interactive: bool) -> str | None:
    """The next line, or None at the end of the input."""
    if interactive and stdin is sys.stdin:
        try:
            return input(PROMPT)
        except EOFError:
            stderr.write("\n")
            return None
    if interactive:
        stderr.write(PROMPT)
        stderr.flush()
    line = stdin.readline()
    return line if line else None
