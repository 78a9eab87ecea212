"""The names a naming read found, shared by the Python workers of one machine.

A naming read (``naming_pass``) that had to go to the end of a capture (an id it names nowhere:
a capture joined after its clients named their ids) costs about half a read of the whole file.
Each worker process would make it again, and so would every later query of the same capture.
So a finished read leaves its names in a small file, keyed by what decides them (the capture's
files by path, size, inode and modification and change times; the read's options; what it
keeps; this package's version), and a worker reads them from there instead. While one worker
reads a capture for names, the others wait for it (``reading``) rather than read it alongside;
a read that stopped early leaves the names it found too (``partial``), which are the first names
of those ids all the same.

The files live in a directory of this user's in the system's temporary directory
(``tempfile.gettempdir()``: ``TMPDIR``, else ``/tmp``), or in ``KAFKA_WIRE_NAMES_DIR``. Only a
directory that this user alone can change is written to, only this user's files are read, and
files not written for a week are removed. A file that cannot be read or written is as if there
were none; where there are no file locks (Windows, some network file systems) workers read
alongside. This module does not decide when a read is needed or what it keeps (``naming_pass``
does).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Hashable, Iterator
from importlib import metadata
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no file locks here, the workers read alongside
    fcntl = None  # type: ignore[assignment]


def _version() -> str:
    try:
        return metadata.version("kafka-wire")
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


_VERSION = _version()
DIRECTORY_VARIABLE = "KAFKA_WIRE_NAMES_DIR"
KEPT_FOR_NS = 7 * 24 * 3600 * 10**9  # a week
# How long a worker waits for another's naming read before it reads alongside: about the time a
# naming read of a few GB takes, so a read that is getting on is waited for to its end.
WAIT_S = 600.0


def directory() -> Path:
    """Where this user's shared names are kept: ``KAFKA_WIRE_NAMES_DIR`` if set."""
    chosen = os.environ.get(DIRECTORY_VARIABLE)
    return Path(chosen) if chosen else Path(tempfile.gettempdir()) / f"kafka-wire-{_uid()}" / "topic-names"


def load(key: Hashable, partial: bool = False) -> dict[str, str] | None:
    """The names a finished read of ``key`` found, if one left them (``partial``: the names a
    read that stopped early found, each the first name of its id all the same). Only a file of this
    user's is taken: another user may have made the directory before this one did."""
    try:
        with open(os.open(_file(key, partial), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), encoding="utf-8") as f:
            if os.fstat(f.fileno()).st_uid != _uid():
                return None
            names = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(names, dict) or not all(isinstance(v, str) for v in names.values()):
        return None
    return names


def store(key: Hashable, names: dict[str, str], partial: bool = False) -> None:
    """Leave the names a finished read of ``key`` found (written whole or not at all; ``partial``:
    of a read that stopped early)."""
    path = _file(key, partial)
    with contextlib.suppress(OSError):
        _own_directory()
        temporary = path.with_name(f"{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(names), encoding="utf-8")
        os.replace(temporary, path)
        _forget_old(path.parent)


def _forget_old(folder: Path) -> None:
    """Names (and locks) not written for ``KEPT_FOR_NS`` go: the directory does not grow forever."""
    cutoff = time.time_ns() - KEPT_FOR_NS
    for entry in os.scandir(folder):
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_mtime_ns < cutoff:
                os.unlink(entry.path)


@contextlib.contextmanager
def reading(key: Hashable, wait_s: float | None = None) -> Iterator[None]:
    """Held while this process reads for the names of ``key``: another waits until it is done, or
    for ``wait_s`` (default ``WAIT_S``), then goes on without it."""
    try:
        _own_directory()
        lock = open(_file(key).with_suffix(".lock"), "a")  # held across the yield
    except OSError:
        lock = None
    if lock is None:  # outside the except: an error of the read is not chained to this one
        yield
        return
    with lock:
        with contextlib.suppress(OSError, AttributeError):  # a file system without locks: the workers read alongside
            _lock(lock, WAIT_S if wait_s is None else wait_s)
        yield  # closing the file releases the lock


def _lock(lock, wait_s: float) -> bool:
    """Take ``lock``'s file lock, waiting at most ``wait_s``; whether it was taken."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.25)  # a quarter second late at most once the wait is long


def _uid() -> int:
    getuid = getattr(os, "getuid", None)  # not on Windows
    return getuid() if getuid is not None else 0


def _file(key: Hashable, partial: bool = False) -> Path:
    digest = hashlib.sha256(repr((_VERSION, key)).encode("utf-8", "surrogatepass")).hexdigest()
    return directory() / f"{digest[:32]}{'.partial' if partial else ''}.json"


def _own_directory() -> None:
    """The directory, made if missing, if only this user can change what is in it: its own and
    writable by it alone, in one of its own or root's (a shared one, as /tmp, sticky)."""
    path = directory()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    here, up, uid = path.stat(), path.parent.stat(), _uid()
    if here.st_uid != uid or here.st_mode & 0o022:
        raise PermissionError(f"{path} is not this user's alone")
    if up.st_uid not in (uid, 0) or (up.st_mode & 0o022 and not up.st_mode & stat.S_ISVTX):
        raise PermissionError(f"{path.parent} is not this user's or root's")
