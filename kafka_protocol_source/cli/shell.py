"""``kafka-wire shell``: SQL statements from stdin, each ended by ``;``, over one SparkSession.

Works typed (a prompt, another while a statement is open, line editing when readline is there)
and piped (no prompt). A statement may run over several lines (``statements.py`` splits them); the
one the input ends in needs no ``;``. ``quit`` and ``help`` are words of the shell, not SQL, and
need none either (``quit`` ends the input: a statement still open runs). A statement that fails
prints its one-line error (with the lines it came from where it ran over several) and the next is
read; the exit code is that of the first failure, or 0. The progress line is paused while the
prompt waits and while results or errors are written to the terminal.
"""

from __future__ import annotations

import contextlib
import sys

from .errors import OK, describe
from .output import Destination, write
from .statements import Statement, StatementSplitter
from .views import VIEW_LIST

HELP = (
    f"views: {VIEW_LIST}. End each statement with ';' (it may run over several lines), e.g. "
    "SELECT api_name, count(*) FROM exchanges GROUP BY 1; DESCRIBE exchanges; quit to leave."
)
PROMPT = "kafka-wire> "
CONTINUED = "       ...> "  # while a statement is open
_QUIT = frozenset({"quit", "exit", "\\q"})
_HELP = frozenset({"help", "\\?"})


def run_shell(spark, stdin, stdout, stderr, fmt: str, max_rows: int, progress, quiet=contextlib.nullcontext) -> int:
    interactive = stdin.isatty()
    if interactive:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401, PLC0415 - line editing and history for input()
        with progress.paused():
            stderr.write(HELP + "\n")
    splitter = StatementSplitter()
    first_failure = OK
    while True:
        with progress.paused():
            line = _read_line(stdin, stderr, interactive, CONTINUED if splitter.pending else PROMPT)
        word = None if line is None else line.strip().rstrip(";").strip().lower()
        if word in _HELP and not splitter.pending:
            stderr.write(HELP + "\n")
            continue
        ended = line is None or word in _QUIT  # quit ends the input there
        if line is None or ended:
            last = splitter.finish()
            statements = [last] if last is not None else []
        else:
            statements = splitter.feed(line)
        for statement in statements:
            failure = _run(spark, statement, stdout, stderr, fmt, max_rows, progress, quiet)
            first_failure = first_failure or failure
        if ended:
            return first_failure


def _run(spark, statement: Statement, stdout, stderr, fmt: str, max_rows: int, progress, quiet) -> int:
    """Runs one statement; returns its exit code (0, or that of its failure)."""
    try:
        write(spark.sql(statement.text), Destination(fmt), stdout, max_rows, quiet)
    except BrokenPipeError:
        raise  # nothing reads the results any more: no later statement is either
    except Exception as e:  # noqa: BLE001 - one line per failed statement, then the next one
        failure = describe(e)
        where = ""
        if statement.last_line > statement.first_line:  # Spark's "line 2" counts from the statement's first
            where = f" (the statement of lines {statement.first_line}-{statement.last_line}: statements end with ';')"
        with progress.paused():
            stdout.flush()
            stderr.write(f"kafka-wire: {failure.message}{where}\n")
            stderr.flush()
        return failure.code
    return OK


def _read_line(stdin, stderr, interactive: bool, prompt: str) -> str | None:
    """The next line, or None at the end of the input."""
    if interactive and stdin is sys.stdin:
        try:
            return input(prompt)
        except EOFError:
            stderr.write("\n")
            return None
    if interactive:
        stderr.write(prompt)
        stderr.flush()
    line = stdin.readline()
    return line if line else None
