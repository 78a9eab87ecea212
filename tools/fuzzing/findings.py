"""What can go wrong with one input, and the signature that groups alike failures.

Owns `Finding` (category, signature, detail), the categories, and the rules that turn an
exception or an output into findings: the innermost frame inside ``kafka_protocol_source``
names where it happened; a ``DecodeError`` is allowed unless a ``MemoryError`` or an
unexpected exception (a bug laundered into a decode error) is in its chain; an error string
in the output that names a Python exception type is a laundered bug too. Does not run inputs.
"""

from __future__ import annotations

import builtins
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import kafka_protocol_source
from kafka_protocol_source.codec.errors import DecodeError, WireError
from kafka_protocol_source.records.errors import RecordsError

PACKAGE_DIR = Path(kafka_protocol_source.__file__).resolve().parent

# Categories. The first four must be zero; "wrapped" is reported beside them.
CRASH = "crash"  # an exception escaped where none may
HANG = "hang"  # the input ran past its time limit
MEMORY = "memory"  # the input needed more memory than the bound
ACCOUNTING = "accounting"  # read_capture's rows do not account for every payload byte exactly once
WRAPPED = "wrapped"  # an internal error laundered into a DecodeError or an error string
HARNESS = "harness"  # the fuzzer failed to make an input: a bug of ours here, not of the package
CATEGORIES = (CRASH, HANG, MEMORY, ACCOUNTING, WRAPPED, HARNESS)
MUST_BE_ZERO = (CRASH, HANG, MEMORY, ACCOUNTING)

_EXPECTED_CAUSES = (DecodeError, WireError, RecordsError)
_PYTHON_ERRORS = sorted(
    n
    for n, v in vars(builtins).items()
    if isinstance(v, type) and issubclass(v, BaseException) and n not in ("Exception", "BaseException")
)
_NAMED_ERROR = re.compile(r"\b(" + "|".join(_PYTHON_ERRORS) + r"|struct\.error|zlib\.error)\b")


@dataclass(frozen=True)
class Finding:
    category: str
    signature: str
    detail: str = ""


def where(tb) -> str:
    """``file.py:function`` of the innermost traceback frame inside the package."""
    frames = _package_frames(tb)
    return frames[-1] if frames else "<outside kafka_protocol_source>"


def where_in_stack(frame) -> str:
    """The same for a live stack (a timer interrupting a hung input), innermost first."""
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if PACKAGE_DIR in path.parents:
            return f"{path.relative_to(PACKAGE_DIR).as_posix()}:{frame.f_code.co_name}"
        frame = frame.f_back
    return "<outside kafka_protocol_source>"


def describe(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(exc, chain=True))
    return text[-6000:]


def _package_frames(tb) -> list[str]:
    out = []
    for frame, _line in traceback.walk_tb(tb):
        path = Path(frame.f_code.co_filename)
        if PACKAGE_DIR in path.parents:
            out.append(f"{path.relative_to(PACKAGE_DIR).as_posix()}:{frame.f_code.co_name}")
    return out


def signature(exc: BaseException) -> str:
    """Exception type and innermost package frame; for a RecursionError, the frame that recurs
    most (where the stack runs out is chance, what recursed is the bug)."""
    if isinstance(exc, RecursionError):
        frames = _package_frames(exc.__traceback__)
        if frames:
            most = max(sorted(set(frames)), key=frames.count)
            return f"RecursionError @ recursion through {most}"
    return f"{type(exc).__name__} @ {where(exc.__traceback__)}"


def _chain(exc: BaseException, implicit: bool = True):
    """``exc`` and what caused it: ``raise ... from`` links, and with ``implicit`` the exceptions
    being handled when each was raised too."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or (exc.__context__ if implicit else None)


def from_exception(exc: BaseException) -> Finding:
    """An exception that escaped: out of memory, or a crash."""
    if any(isinstance(e, MemoryError) for e in _chain(exc)):
        return Finding(MEMORY, signature(exc), describe(exc))
    return Finding(CRASH, signature(exc), describe(exc))


def from_decode_error(error: DecodeError) -> list[Finding]:
    """A DecodeError is the allowed outcome, unless it hides a MemoryError or a bug of ours."""
    chain = list(_chain(error))
    if any(isinstance(e, MemoryError) for e in chain):
        culprit = next(e for e in chain if isinstance(e, MemoryError))
        return [Finding(MEMORY, f"MemoryError (as DecodeError) @ {where(culprit.__traceback__)}", describe(error))]
    if "compiled parser failed where the interpreted one did not" in error.reason:
        cause = error.__cause__ or error
        return [
            Finding(
                WRAPPED,
                f"compiled != interpreted: {type(cause).__name__} @ {where(cause.__traceback__)}",
                describe(error),
            )
        ]
    # Only explicit causes: the decoder re-reads with the interpreted parser while handling the
    # compiled parser's failure, so that failure (struct.error, say) is context, by design.
    foreign = [e for e in _chain(error, implicit=False) if not isinstance(e, _EXPECTED_CAUSES)]
    if foreign:
        culprit = foreign[-1]
        return [
            Finding(
                WRAPPED, f"{type(culprit).__name__} (as DecodeError) @ {where(culprit.__traceback__)}", describe(error)
            )
        ]
    return []


def laundered_strings(value, path: str = "") -> list[Finding]:
    """Error strings anywhere in a decoded value (or an exchange) that name a Python exception."""
    out: list[Finding] = []
    stack = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(sub, str) and (key == "error" or str(key).endswith("_error")):
                    match = _NAMED_ERROR.search(sub)
                    if match:
                        out.append(
                            Finding(WRAPPED, f"{match.group(1)} in an error string ({key})", f"{at}.{key}: {sub}")
                        )
                elif isinstance(sub, (dict, list, tuple)):
                    stack.append((sub, f"{at}.{key}"))
        elif isinstance(item, (list, tuple)):
            stack.extend((sub, f"{at}[{i}]") for i, sub in enumerate(item) if isinstance(sub, (dict, list, tuple)))
    return out
