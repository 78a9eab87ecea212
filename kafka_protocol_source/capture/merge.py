"""The packets of several capture files as one capture: in capture-time order, each file's own kept.

Files that overlap in time (one per interface, one per host, or one per direction of the same
traffic) are one capture taken in several places; read one after the other, a connection's
packets would go back in time at each file and its two sides would never meet. ``in_time_order``
interleaves the files' items by their capture times, as ``mergecap`` does, so that TCP
reassembly sees each packet where it belongs and drops the copies of packets seen twice.

Owns only the order. Each file comes as the time of its first packet (``summary.first_packet_ns``)
and a function that opens it; a file is opened when the merge reaches that time, so that the
pieces of a rotated capture, which follow one another, are read in turn with two open at most.
An item without a time (a packet of a pcapng simple block, an issue) goes with the one before it
in its file. Does not read records (``reader``) or decide which files are one capture
(``summary``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from heapq import heappop, heappush

from .model import CaptureIssue, TcpSegment

Item = TcpSegment | CaptureIssue
Opener = Callable[[], Iterable[Item]]


def in_time_order(files: Sequence[tuple[int | None, Opener]]) -> Iterator[Item]:
    """The items of every file, ordered by capture time (ties: the file that starts first);
    each file's own items keep their order, whatever their times. ``files``: (the time of its
    first packet, None when not known: opened first; the function that opens it)."""
    waiting = deque(sorted(files, key=lambda f: -1 if f[0] is None else f[0]))
    heap: list[tuple[int, int, Item, Iterator[tuple[int, Item]]]] = []
    opened = 0

    def open_due(now: int) -> None:
        """Open every file that starts by ``now``."""
        nonlocal opened
        while waiting and (waiting[0][0] is None or waiting[0][0] <= now):
            timed = _timed(waiting.popleft()[1]())
            first = next(timed, None)
            if first is not None:
                heappush(heap, (first[0], opened, first[1], timed))
            opened += 1

    while heap or waiting:
        if not heap:
            start = waiting[0][0]
            open_due(-1 if start is None else start)
            continue
        if waiting and waiting[0][0] is not None and waiting[0][0] <= heap[0][0]:
            open_due(heap[0][0])
            continue
        _, number, item, timed = heappop(heap)
        yield item
        bound = heap[0][:2] if heap else None
        next_start = waiting[0][0] if waiting else None
        for key, item in timed:
            if (bound is not None and (key, number) > bound) or (next_start is not None and key >= next_start):
                heappush(heap, (key, number, item, timed))
                break
            yield item


def _timed(items: Iterable[Item]) -> Iterator[tuple[int, Item]]:
    """Each item with its sort key: its capture time, or that of the item before it."""
    last = 0
    for item in items:
        if item.__class__ is TcpSegment and item.timestamp_ns:
            last = item.timestamp_ns
        yield last, item
