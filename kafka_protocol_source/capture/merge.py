"""The packets of several capture files as one capture: in capture-time order, each file's own kept.

Files that overlap in time (one per interface, one per host, or one per direction of the same
traffic) are one capture taken in several places; read one after the other, a connection's
packets would go back in time at each file and its two sides would never meet. ``in_time_order``
interleaves the files' items by their capture times, as ``mergecap`` does, so that TCP
reassembly sees each packet where it belongs and drops the copies of packets seen twice.

Owns only the order. The files are handed over as opening functions, in the order of their first
packets; a file is opened when the one before it starts to be read, so that the pieces of a
rotated capture, which follow one another, are read one after the other with two open at most.
An item without a time (a packet of a pcapng simple block, an issue) goes with the one before it
in its file. Does not read records (``reader``) or decide which files are one capture
(``summary``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from heapq import heappop, heappush

from .model import CaptureIssue, TcpSegment

Item = TcpSegment | CaptureIssue


def in_time_order(files: Sequence[Callable[[], Iterable[Item]]]) -> Iterator[Item]:
    """The items of every file, ordered by capture time (ties: the earlier file first); each
    file's own items keep their order, whatever their times."""
    heap: list[tuple[int, int, Item, Iterator[tuple[int, Item]]]] = []
    opened = 0

    def open_next() -> None:
        nonlocal opened
        number, opened = opened, opened + 1
        timed = _timed(files[number]())
        first = next(timed, None)
        if first is not None:
            heappush(heap, (first[0], number, first[1], timed))
        elif opened < len(files):  # an empty file: its follower is the next to start
            open_next()

    open_next()
    while heap:
        _, number, item, timed = heappop(heap)
        if number == opened - 1 and opened < len(files):
            open_next()  # this file has started: the next one may overlap it
        yield item
        if not heap:
            for _, item in timed:
                yield item
            continue
        bound = heap[0][:2]
        for key, item in timed:
            if (key, number) > bound:
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
