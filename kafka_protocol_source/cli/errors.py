"""Exit codes, and each failure as one line that keeps the useful part.

Spark reports a query error with the plan after the message, a bad option inside the Python
traceback of the data source, and a FAILFAST read inside the traceback of the worker: each is
cut down here to the message a person acts on ("Did you mean ..." included).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OK = 0
FAILED = 1  # the read or the query failed (FAILFAST, I/O, Spark) or something unexpected happened
USAGE = 2  # a bad command line, option, path or query
NO_KAFKA = 3  # the input held no Kafka exchange at all
STDOUT_CLOSED = 141  # whoever read stdout stopped (``| head``): 128 + SIGPIPE, as for a filter that signal ended

# Python data sources' errors reach us as Spark's text around a Python traceback
_PYTHON_ERROR_CLASSES = ("PYTHON_DATA_SOURCE_ERROR", "PYTHON_EXCEPTION")
_LAST_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)
_TRACEBACK = "Traceback (most recent call last)"
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+")
_USAGE_PYTHON_ERRORS = frozenset({"OptionError", "FileNotFoundError", "NotADirectoryError", "PermissionError"})


class UsageError(Exception):
    """A command-line mistake found before Spark starts."""


@dataclass(frozen=True)
class Failure:
    code: int
    message: str  # one line
    expected: bool = True  # False: not a failure the command knows; Spark's log may say more


def describe(error: BaseException) -> Failure:
    """The exit code and the one line to print for ``error``."""
    if isinstance(error, UsageError):
        return Failure(USAGE, str(error))
    text = str(error)
    condition = _condition(error)
    if condition in _PYTHON_ERROR_CLASSES or _TRACEBACK in text:
        return _python_error(text)
    if condition is not None:  # str() keeps the query position ("line 1, pos 7") that getMessage() drops
        return Failure(USAGE if _is_analysis(error) else FAILED, _first_line(text))
    if isinstance(error, (FileNotFoundError, NotADirectoryError, FileExistsError)):
        return Failure(USAGE, text)
    return Failure(FAILED, f"{type(error).__name__}: {_first_line(text)}", expected=False)


def _condition(error: BaseException) -> str | None:
    get = getattr(error, "getCondition", None)
    try:
        return get() if get else None
    except Exception:  # noqa: BLE001 - a PySpark exception without a JVM side
        return None


def _is_analysis(error: BaseException) -> bool:
    from pyspark.errors import AnalysisException  # noqa: PLC0415

    return isinstance(error, AnalysisException)


def _python_error(message: str) -> Failure:
    matches = _LAST_PYTHON_ERROR.findall(message)
    if not matches:
        return Failure(FAILED, _first_line(message), expected=False)
    kind, text = matches[-1]
    text = _SQLSTATE.sub("", text).strip()
    return Failure(USAGE if kind in _USAGE_PYTHON_ERRORS else FAILED, text)


def _first_line(message: str) -> str:
    for line in message.strip().splitlines():
        if line.strip():
            return line.strip().rstrip(";")
    return ""
