"""How many bytes of capture files this process has read: what a progress line counts.

Owns one process-wide count, added to by every read of a capture file's bytes (plain, gzipped
as stored, or the runs of an indexed slice), and the wrappers that add to it; and ``uncounted``,
for a read that goes over bytes a second time (a look ahead for topic names) and is no part of
the input's progress. Does not own what the count is shown as: a reader takes the count before
and after its work, and reports the difference where it reports progress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

_T = TypeVar("_T")
_read = [0]
_paused = [0]  # reads under way inside ``uncounted`` (a process reads for one task at a time)


def bytes_read() -> int:
    """The bytes of capture files read by this process so far."""
    return _read[0]


def counted(read: Callable[..., bytes]) -> Callable[..., bytes]:
    """``read(...)`` (``read(n)``, ``pread(n, offset)``), adding what it returns to the count."""

    def read_counted(*args: int) -> bytes:
        data = read(*args)
        if not _paused[0]:
            _read[0] += len(data)
        return data

    return read_counted


def uncounted(items: Iterable[_T]) -> Iterator[_T]:
    """``items``, with what is read to give each of them left out of the count."""
    it = iter(items)
    while True:
        _paused[0] += 1
        try:
            item = next(it)
        except StopIteration:
            return
        finally:
            _paused[0] -= 1
        yield item
