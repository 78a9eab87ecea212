"""The folder a stream follows, as last listed: which captures it holds, and when they were written.

Owns listing the stream's paths, the age limits (``minFileAge``, ``maxFileAge``), each file's
summary (cached by path, size and modification time), when each file was last written, and when
the folder last changed. A file is written when its modification time says so, or when this
reader saw it change: one copied in with ``cp -p`` carries an old modification time, and is new
all the same. A file that is not a pcap/pcapng capture (a stream dump, a broken file, one whose
header its writer left cut short) is listed as an ``OTHER`` summary of one packet, to be read
once, whole. Does not own offsets, the frontier or what a micro-batch reads (``stream.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ..capture.summary import CaptureSummary, summarize
from .options import ReadOptions
from .paths import expand

OTHER = "other"  # the container of a file that is not a pcap/pcapng capture


def other(path: str, size: int) -> CaptureSummary:
    """The summary of a file read once, whole."""
    return CaptureSummary(path, OTHER, False, frozenset(), None, None, 1, size, True)


class WatchedFolder:
    """``captures()`` lists the folder; ``written`` and ``changed_ns`` say what it saw change."""

    def __init__(self, options: ReadOptions, min_age_ns: int, max_age_ns: int):
        self.options = options
        self.min_age_ns = min_age_ns
        self.max_age_ns = max_age_ns
        self._summaries: dict[tuple, CaptureSummary | None] = {}
        self._listing: frozenset | None = None
        # Per file, its size and modification time as last listed, and when it was last written.
        self.written: dict[str, tuple[int, int, int]] = {}
        # When the folder last changed: a file came, went or grew as this reader saw it, or was
        # written (a file minFileAge still holds back, too).
        self.changed_ns = time.time_ns()

    def captures(self, left_alone: Callable[[int, int], bool]) -> dict[str, CaptureSummary]:
        """The files with packets, old enough (``minFileAge``) and not too old (``maxFileAge``
        before the newest); ``left_alone(written_ns, now_ns)``: whether a file last written then
        is done (a file that does not read as a capture, left alone, is read once, whole)."""
        try:
            files = expand(self.options.paths, self.options.recursive, self.options.glob_filter)
        except FileNotFoundError:
            return {}  # the directory may not exist yet
        now = time.time_ns()
        every = {}
        for path in files:
            try:
                every[path] = os.stat(path)
            except OSError:
                continue
        self.written = {path: _written(st, self.written.get(path), now) for path, st in every.items()}
        listing = frozenset((path, st.st_size, st.st_mtime_ns) for path, st in every.items())
        if listing != self._listing:
            self._listing, self.changed_ns = listing, now
        written = max((st.st_mtime_ns for st in every.values()), default=0)
        self.changed_ns = max(self.changed_ns, min(written, now))
        stats = {path: st for path, st in every.items() if now - st.st_mtime_ns >= self.min_age_ns}
        if not stats:
            return {}
        newest = max(st.st_mtime_ns for st in stats.values())
        out = {}
        for path, st in stats.items():
            if newest - st.st_mtime_ns > self.max_age_ns:
                continue
            if st.st_size == 0:
                continue  # nothing yet: tcpdump's next file stays empty until its first write
            s = self.summary(path, st)
            if s is None and not left_alone(st.st_mtime_ns, now):
                continue  # not a capture yet: maybe one whose header is half written
            # Not a capture (a stream dump, or a broken file), or one whose header its writer left
            # cut short: read once, whole
            if s is None or (not s.packets and not s.complete and left_alone(st.st_mtime_ns, now)):
                s = other(path, st.st_size)
            if s.packets:
                out[path] = s
        return out

    def every_capture(self) -> dict[str, CaptureSummary]:
        """Every capture in the folder now, whatever its age (where planned files went)."""
        try:
            files = expand(self.options.paths, self.options.recursive, self.options.glob_filter)
        except FileNotFoundError:
            return {}
        return {path: s for path in files if (s := self.summary(path)) is not None and s.packets}

    def summary(self, path: str, st: os.stat_result | None = None) -> CaptureSummary | None:
        if st is None:
            try:
                st = os.stat(path)
            except OSError:
                return None
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in self._summaries:
            self._summaries[key] = summarize(path, digest=True)
        return self._summaries[key]


def _written(st: os.stat_result, before: tuple[int, int, int] | None, now: int) -> tuple[int, int, int]:
    """(size, modification time, when last written) of a file listed ``now``."""
    if before is not None and before[:2] == (st.st_size, st.st_mtime_ns):
        return before
    return st.st_size, st.st_mtime_ns, max(st.st_mtime_ns, now)  # (changed since: now, as this reader saw it)
