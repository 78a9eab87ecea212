"""Per-connection TCP facts of a capture: packets, bytes, retransmissions, reordering, gaps,
handshake, ending (``connection_stats``).

Owns feeding each connection's tracker (``sequence_analysis``) and deciding when a connection's
facts are final. Which connection a segment belongs to, its gaps and how it ended are not
decided here: the segments go through ``reassemble`` as well and its events say (its connection
keys, its ``StreamGap``s, its ``close`` detail), so a connection here is exactly a connection of
the exchanges. So are retransmitted copies that differed from the bytes read: its
``StreamConflict``s, one per such packet, as far as ``reassemble`` could compare them. Does
not own reassembly or any idea of which side is the Kafka client.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from ..capture.model import CaptureIssue, TcpSegment
from .flows import DEFAULT_MAX_BUFFERED_BYTES, reassemble
from .model import ConnectionKey, FlowEvent, StreamConflict, StreamGap
from .sequence_analysis import ConnectionStats, ConnectionTracker, DirectionStats

__all__ = ["LINGER_NS", "ConnectionStats", "DirectionStats", "connection_stats"]

# A closed connection's stats wait this much capture time for late segments (retransmitted FINs,
# the last ACK) before they are final; twice Linux's TIME_WAIT.
LINGER_NS = 120 * 10**9


def _four(key: ConnectionKey) -> tuple:
    return key.a_ip, key.a_port, key.b_ip, key.b_port


class _Table:
    def __init__(self) -> None:
        self.live: dict[ConnectionKey, ConnectionTracker] = {}
        self.latest: dict[tuple, ConnectionKey] = {}  # canonical 4-tuple -> its newest connection
        self.closed: deque[tuple[int, ConnectionKey]] = deque()  # (close time, key), in close order
        self.ready: list[ConnectionStats] = []
        self.now = 0

    def tap(self, items: Iterable[TcpSegment | CaptureIssue]) -> Iterator[TcpSegment | CaptureIssue]:
        """Pass the items on to ``reassemble``, counting each segment once its events have been seen.

        ``reassemble`` yields every event a segment causes before it asks for the next one, so when
        it does, an ``open`` for the segment's connection has been seen and ``latest`` names it.
        """
        pending = None
        for item in items:
            if pending is not None:
                self._count(pending)
                pending = None
            if item.__class__ is TcpSegment:
                pending = item
            yield item
        if pending is not None:
            self._count(pending)

    def _count(self, seg: TcpSegment) -> None:
        src, dst = (seg.src_ip, seg.src_port), (seg.dst_ip, seg.dst_port)
        key = self.latest.get((*src, *dst) if src <= dst else (*dst, *src))
        tracker = self.live.get(key) if key is not None else None
        if tracker is not None:  # else a late segment of a connection already given out
            tracker.segment(seg)
        self.now = seg.timestamp_ns
        closed = self.closed
        while closed and closed[0][0] + LINGER_NS <= self.now:
            self._finish(closed.popleft()[1])

    def _finish(self, key: ConnectionKey) -> None:
        tracker = self.live.pop(key, None)
        if tracker is not None:
            self.ready.append(tracker.frozen())

    def event(self, ev: FlowEvent | StreamGap | StreamConflict) -> None:
        if isinstance(ev, StreamGap):
            tracker = self.live.get(ev.conn)
            if tracker is not None:
                tracker.gap(ev)
            return
        if isinstance(ev, StreamConflict):
            tracker = self.live.get(ev.conn)
            if tracker is not None:
                tracker.conflict(ev)
            return
        kind = ev.kind
        if kind == "open":
            four = _four(ev.conn)
            previous = self.latest.get(four)
            if previous is not None:
                self._finish(previous)  # the 4-tuple is a new connection now: the old one is over
            self.latest[four] = ev.conn
            self.live[ev.conn] = ConnectionTracker(ev.conn, ev.initiator, ev.timestamp_ns)
            return
        tracker = self.live.get(ev.conn)
        if tracker is None:
            return
        if kind in ("fin", "reset") and tracker.closed_by is None:
            tracker.closed_by = ev.direction
        elif kind == "close":
            tracker.ended, tracker.ended_ns = ev.detail, ev.timestamp_ns
            if tracker.initiator is None:
                tracker.initiator = ev.initiator  # a SYN/ACK seen after the first packet
            self.closed.append((ev.timestamp_ns, ev.conn))

    def finish_all(self) -> None:
        for key in list(self.live):
            self._finish(key)


def connection_stats(
    segments: Iterable[TcpSegment | CaptureIssue], *, max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES
) -> Iterator[ConnectionStats]:
    """One ``ConnectionStats`` per TCP connection in ``segments`` (capture order), as each is final.

    A connection is final some capture time after it closed (late segments still count) or when
    its 4-tuple starts a new connection; the rest come at the end. ``max_buffered_bytes`` is
    handed to ``reassemble`` (its overflow gaps are counted as gaps).
    """
    table = _Table()
    ready = table.ready
    for ev in reassemble(table.tap(segments), max_buffered_bytes=max_buffered_bytes):
        if isinstance(ev, (FlowEvent, StreamGap, StreamConflict)):
            table.event(ev)
        if ready:
            yield from ready
            ready.clear()
    table.finish_all()
    yield from ready
    ready.clear()
