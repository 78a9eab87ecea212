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


def counted(read: Callable[[int], bytes]) -> Callable[[int], bytes]:
    """``read(n)``, adding what it returns to the count."""

    def read_counted(n: int) -> bytes:
        data = read(n)
        _read[0] += len(data)
        return data

    return read_counted


def counted_pread(pread: Callable[[int, int], bytes]) -> Callable[[int, int], bytes]:
    """``pread(n, offset)``, adding what it returns to the count."""

    def pread_counted(n: int, offset: int) -> bytes:
        data = pread(n, offset)
        _read[0] += len(data)
        return data

    return pread_counted
