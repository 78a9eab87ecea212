"""How many bytes of capture files this process has read: what a progress line counts.

Owns one process-wide count, added to by every read of a capture file's bytes (plain, gzipped
as stored, or the runs of an indexed slice), and the wrappers that add to it. Does not own what
the count is shown as: a reader takes the count before and after its work, and reports the
difference where it reports progress.
"""

from __future__ import annotations

from collections.abc import Callable

_read = [0]


def bytes_read() -> int:
    """The bytes of capture files read by this process so far."""
    return _read[0]


def counted(read: Callable[..., bytes]) -> Callable[..., bytes]:
    """``read(...)`` (``read(n)``, ``pread(n, offset)``), adding what it returns to the count."""

    def read_counted(*args: int) -> bytes:
        data = read(*args)
        _read[0] += len(data)
        return data

    return read_counted
