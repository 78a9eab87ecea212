"""The connection table and `reassemble`: TCP segments in, per-direction stream events out.

Owns: which connection a segment belongs to (4-tuple plus instance number, a new instance when
the 4-tuple is reused after FIN/RST or by a SYN with a different ISN), SYN/FIN/RST handling,
the initiator hint, flushing everything at the end of the capture, and settling together the two
sides of a connection the capture joined mid-stream: what both held while their start was
provisional comes out in capture order across them, as if neither had been held (a framer
resynchronising the broker's side weighs its candidates by the requests sent before them). Per-direction ordering,
gaps and retransmitted copies that differ are `stream`'s job. Capture issues pass through
untouched, in order.

A connection whose FINs are in is closed once the bytes they say were sent are all in: a
capture can write a segment a few packets after its sender's FIN. While some are missing the
close waits, for at most ``REORDER_WINDOW`` packets of the capture; then what never came becomes
a gap. After a RST it waits that long in any case, counted again from each segment that still
brings bytes: the peer's bytes in flight when the RST was sent (a response on its way, however
many packets long) still cross the wire, and a capture merged from two points or written out of
order can put the RST before bytes sent earlier.

Memory stays bounded however long the capture: a closed connection is remembered (its instance
number, and per side the few numbers that tell a late retransmission) for the last
``MAX_CLOSED_REMEMBERED`` closed connections only, so a 4-tuple reused after that many other
connections closed is numbered from 0 again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from heapq import merge
from operator import itemgetter

from ..capture.model import ACK, FILE_MASK, FILE_SHIFT, FIN, RST, SYN, CaptureIssue, TcpSegment
from .model import ConnectionKey, Direction, FlowEvent, StreamChunk, StreamConflict, StreamGap, new_flow_event
from .stream import REORDER_WINDOW, CutCopies, DirectionStream, offset_at

DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024
# Closed connections are remembered (to recognise late retransmissions) up to this many.
MAX_CLOSED_REMEMBERED = 1 << 16

StreamEvent = StreamChunk | StreamGap | StreamConflict | FlowEvent | CaptureIssue
_NEVER = 1 << 62


class _Connection:
    __slots__ = ("closed", "closing", "fins", "initiator", "key", "settle_at", "streams")

    def __init__(self, key: ConnectionKey) -> None:
        self.key = key
        self.streams: dict[tuple[str, int], DirectionStream] = {}
        self.initiator: Direction | None = None
        self.fins: set[tuple[str, int]] = set()
        self.closed = False
        # Its FINs or RST are in but bytes before them are not: (time, tick, why).
        self.closing: tuple[int, int, str] | None = None
        # Both sides started provisionally (joined mid-connection): the tick at which both are
        # settled together (-1: not so, or done).
        self.settle_at = -1


def _waits(conn: _Connection) -> bool:
    """Whether bytes sent before the FINs of ``conn`` are still to come (see ``DirectionStream.pending``)."""
    a, b = conn.streams.values()
    return a.pending() or b.pending()


def _settle_with_peer(conn: _Connection) -> None:
    """A side that just started provisionally, while the other side is provisional too: both
    settle at the later of their ticks, together (``_settle_together``)."""
    a, b = conn.streams.values()
    if a.settles_at >= 0 and b.settles_at >= 0:
        conn.settle_at = max(a.settles_at, b.settles_at)
        a.wait_until(conn.settle_at)
        b.wait_until(conn.settle_at)


def _settle_together(conn: _Connection, tick: int | None, out: list) -> None:
    """Deliver what both sides held while provisional, in capture order across the two: a
    framer resynchronising one side weighs candidates by the requests the other side has sent
    (``framing.sniff``), so a response must not be framed before the requests captured before it."""
    conn.settle_at = -1
    runs = []
    for stream in conn.streams.values():
        events: list = []
        stream.settle(events, tick)
        runs.append(_by_packet(events))
    out.extend(event for _, event in merge(*runs, key=itemgetter(0)))


def _by_packet(events: list) -> list[tuple[tuple[int, int], StreamEvent]]:
    """Events of one side, in order, each keyed by the latest packet (time, then index: the files
    of a merged read are numbered apart) delivered up to it."""
    keyed, last = [], (-1, -1)
    for event in events:
        if type(event) is StreamChunk:
            last = max(last, (event.timestamp_ns, event.packet_index))
        keyed.append((last, event))
    return keyed


def _remembered(conn: _Connection, four: tuple) -> tuple:
    """What telling a late segment of a closed connection needs: per side (the first endpoint of
    ``four``, then the second) its ISN, the sequence number of its offset 0 and its end offset;
    then the connection's instance number (the next use of the 4-tuple is numbered after it).

    Plain numbers in a tuple, which the garbage collector stops tracking: tens of thousands of
    closed connections kept as objects (streams, directions, lists) made its full collections
    walk them all, about a tenth of read_capture's time on a capture of many short connections.
    """
    a, b = conn.streams[(four[0], four[1])], conn.streams[(four[2], four[3])]
    return (a.isn, a.base_seq, a.offset, b.isn, b.base_seq, b.offset, conn.key.instance)


class _Table:
    def __init__(self, max_buffered_bytes: int) -> None:
        self.cap = max_buffered_bytes
        self.cut_copies = CutCopies()
        self.live: dict[tuple, _Connection] = {}  # canonical 4-tuple -> connection
        self.closed: dict[tuple, tuple] = {}  # canonical 4-tuple -> _remembered(connection)
        # Connections waiting for bytes sent before their FINs or RST, oldest first, and the
        # tick from which the first of them has waited long enough.
        self.closing: dict[tuple, _Connection] = {}
        self.expires_at = _NEVER
        # The clock REORDER_WINDOW counts on: packets of the capture passed, over every file of a
        # session (a file's own count is its packets' index in it: a split read that skips other
        # connections' records, or a non-TCP packet, still counts them, as one whole read does).
        self.tick = 0
        self._passed: dict[int, int] = {}  # file number -> packets of it passed

    def _tick(self, index: int) -> int:
        """The clock at the packet of (session) ``index``."""
        passed = self._passed
        file, local = index >> FILE_SHIFT, (index & FILE_MASK) + 1
        before = passed.get(file, 0)
        if local > before:
            passed[file] = local
            self.tick += local - before
        return self.tick

    def _open(self, four: tuple, seg: TcpSegment, out: list) -> _Connection:
        old = self.closed.pop(four, None)
        n = 0 if old is None else old[6] + 1
        conn = self.live[four] = _Connection(ConnectionKey(four[0], four[1], four[2], four[3], n))
        a, b = (four[0], four[1]), (four[2], four[3])
        for src, dst in ((a, b), (b, a)):
            conn.streams[src] = DirectionStream(conn.key, Direction(*src, *dst), self.cap, self.cut_copies)
        if seg.flags & SYN:
            sender = conn.streams[(seg.src_ip, seg.src_port)].direction
            receiver = conn.streams[(seg.dst_ip, seg.dst_port)].direction
            conn.initiator = receiver if seg.flags & ACK else sender
        out.append(new_flow_event(conn.key, "open", seg.timestamp_ns, None, conn.initiator))
        return conn

    def close(self, four: tuple, conn: _Connection, ts: int, why: str, out: list) -> None:
        if conn.settle_at >= 0:
            _settle_together(conn, None, out)
        for stream in conn.streams.values():
            stream.close(out, ts)
        conn.closed = True
        del self.live[four]
        if conn.closing is not None:
            del self.closing[four]
        self.closed[four] = _remembered(conn, four)
        if len(self.closed) > MAX_CLOSED_REMEMBERED:
            del self.closed[next(iter(self.closed))]
        out.append(new_flow_event(conn.key, "close", ts, None, conn.initiator, why))

    @staticmethod
    def _belongs_to_closed(old: tuple, four: tuple, seg: TcpSegment) -> bool:
        """A segment after close is a late retransmission unless it is a new SYN or brings bytes from
        where the old data ended on.

        A SYN with the ISN the closed connection began with is a copy of that one: the same packets
        captured again on another interface (``-i any`` beside ``-i lo``, a pcapng of two interfaces
        written one interface's block after the other's), not a new connection. So is a SYN-ACK
        that answers the closed connection's SYN, whatever its own ISN (its other SYN-ACK).
        """
        side = 0 if seg.src_ip == four[0] and seg.src_port == four[1] else 3
        isn, base_seq, offset = old[side : side + 3]
        if seg.flags & SYN:
            if isn is not None and isn == seg.seq:
                return True
            peer_isn = old[3 - side]
            return bool(seg.flags & ACK) and peer_isn is not None and seg.ack == (peer_isn + 1) & 0xFFFFFFFF
        if not seg.payload:
            return True
        if base_seq is None:  # the side sent nothing the capture had: its bytes cannot be a copy
            return False
        return -1 <= offset_at(base_seq, offset, seg.seq) < offset

    def segment(self, seg: TcpSegment) -> list[StreamEvent]:
        """The events one segment causes, in order (most segments: one chunk or none)."""
        out: list[StreamEvent] = []
        ts, src_ip, src_port, dst_ip, dst_port, seq, ack, flags, payload, missing, index, _ = seg
        tick = self._tick(index)
        if tick >= self.expires_at:
            self._close_expired(tick, out)
        src, dst = (src_ip, src_port), (dst_ip, dst_port)
        four = (src_ip, src_port, dst_ip, dst_port) if src <= dst else (dst_ip, dst_port, src_ip, src_port)
        conn = self.live.get(four)
        if conn is None:
            old = self.closed.get(four)
            if old is not None and self._belongs_to_closed(old, four, seg):
                return out
            conn = self._open(four, seg, out)
        elif flags & SYN and not flags & ACK:
            if not conn.streams[src].takes_syn(seq, tick, ts, conn.streams[dst].first_ns):
                closing = conn.closing  # closed by its FINs or RST, when they came
                self.close(four, conn, *((closing[0], closing[2]) if closing else (ts, "reused")), out)
                conn = self._open(four, seg, out)
        streams = conn.streams
        if conn.settle_at >= 0 and tick >= conn.settle_at:
            _settle_together(conn, tick, out)
        stream = streams[src]
        if flags & ACK:
            receiver = streams[dst]
            receiver.acked(ack)
            if receiver.held.count:  # (holes wait only where bytes are buffered)
                receiver.acknowledged(ack, tick, out)
        if flags & SYN:
            stream.syn(seq)
            if conn.initiator is None:
                conn.initiator = streams[dst if flags & ACK else src].direction
        # (a RST's payload, diagnostic text at most, is not the stream's: RFC 1122 4.2.2.12)
        if (payload or missing) and not flags & RST:
            seq = (seq + 1) & 0xFFFFFFFF if flags & SYN else seq  # a SYN's data (TCP Fast Open): after the ISN
            conn, stream = self._bytes(four, conn, src, seq, seg, tick, out)
        size = len(payload) + missing
        if flags & (RST | FIN) and self._ended(four, conn, src, stream, flags, seq, size, ts, tick, out):
            return out
        closing = conn.closing
        if closing is not None and closing[2] == "fin" and not _waits(conn):
            self.close(four, conn, closing[0], "fin", out)
        return out

    def _bytes(
        self, four: tuple, conn: _Connection, src: tuple, seq: int, seg: TcpSegment, tick: int, out: list
    ) -> tuple[_Connection, DirectionStream]:
        """A segment's payload (or bytes its snaplen cut) to its side's stream; the connection and
        stream they went to (a new use of the 4-tuple after a close: ``_after_end``)."""
        stream = conn.streams[src]
        if conn.closing is not None:
            conn, stream = self._after_end(four, conn, src, seg, out)
        ts, payload, missing = seg.timestamp_ns, seg.payload, seg.missing
        starts = stream.base_seq is None
        closing = conn.closing
        had = stream.offset + stream.held.count if closing is not None and closing[2] == "reset" else None
        if not stream.add(seq, payload, missing, ts, seg.packet_index, out, tick):
            out.append(self._overflow(conn, stream, ts))
        if starts:
            _settle_with_peer(conn)
        if closing is not None and had is not None and stream.offset + stream.held.count > had:
            conn.closing = (closing[0], tick, closing[2])  # new bytes in flight at the RST: wait on for more
            del self.closing[four]
            self.closing[four] = conn  # (the table stays in the order of its ticks)
        return conn, stream

    def _overflow(self, conn: _Connection, stream: DirectionStream, ts: int) -> FlowEvent:
        return new_flow_event(
            conn.key, "overflow", ts, stream.direction, conn.initiator, f"more than {self.cap} bytes out of order"
        )

    def _after_end(
        self, four: tuple, conn: _Connection, src: tuple, seg: TcpSegment, out: list
    ) -> tuple[_Connection, DirectionStream]:
        """The connection and stream of a segment with bytes of a closing connection: its own,
        unless the bytes lie past their side's own FIN or RST. Right where it said its bytes end
        (a FIN takes one), the FIN or RST did not end them: a middlebox's reset the endpoints
        ignored, a flag a corrupt packet set; the stream goes on, and the connection is no longer
        closing. Further on, they are a new use of the 4-tuple whose SYN was not captured: the
        connection closes as its FIN or RST said, and a new one opens."""
        stream = conn.streams[src]
        beyond = stream.past_end(seg.seq)
        if beyond is None:
            return conn, stream
        closing = conn.closing
        assert closing is not None, "called for a closing connection only"
        if beyond <= 1:
            stream.go_on()
            conn.fins.discard(src)
            del self.closing[four]
            conn.closing = None
            return conn, stream
        self.close(four, conn, closing[0], closing[2], out)
        conn = self._open(four, seg, out)
        return conn, conn.streams[src]

    def _ended(
        self,
        four: tuple,
        conn: _Connection,
        src: tuple,
        stream: DirectionStream,
        flags: int,
        seq: int,
        size: int,
        ts: int,
        tick: int,
        out: list,
    ) -> bool:
        """A RST, or a FIN (its bytes end before ``seq`` + ``size``, the segment's payload, which
        a RST's is not): its flow event, and the close it may bring; True once the connection's
        close is decided (done, or waiting for bytes)."""
        end = (seq if flags & RST else seq + size) & 0xFFFFFFFF
        if flags & RST:
            if conn.closing is not None and conn.closing[2] == "reset":
                return False
            out.append(new_flow_event(conn.key, "reset", ts, stream.direction, conn.initiator))
            if src not in conn.fins:  # (after a FIN, the FIN said where the bytes end)
                stream.ended(end, always=True)
            self._close_when_complete(four, conn, ts, tick, "reset", out)
            return True
        if src in conn.fins:
            return False
        conn.fins.add(src)
        out.append(new_flow_event(conn.key, "fin", ts, stream.direction, conn.initiator))
        stream.ended(end)
        if len(conn.fins) < 2:
            return False
        self._close_when_complete(four, conn, ts, tick, "fin", out)
        return True

    def _close_when_complete(self, four: tuple, conn: _Connection, ts: int, tick: int, why: str, out: list) -> None:
        """Close ``conn``, whose FINs or RST came at ``ts`` (at ``tick``), unless bytes sent
        before them are still to come: then it waits (``_close_expired``). After a RST it always
        waits: what the peer had sent before the RST reached it still crosses the wire after."""
        if why == "reset" or _waits(conn):
            if conn.closing is None:
                if not self.closing:
                    self.expires_at = tick + REORDER_WINDOW
                self.closing[four] = conn
            conn.closing = (ts, tick if conn.closing is None else conn.closing[1], why)
        else:
            self.close(four, conn, ts, why, out)

    def _close_expired(self, tick: int, out: list) -> None:
        """Close the connections that have waited ``REORDER_WINDOW`` packets for bytes sent
        before their FINs or RST (what never came becomes a gap)."""
        self.expires_at = _NEVER
        expired = []
        for four, conn in self.closing.items():
            closing = conn.closing
            assert closing is not None, "a connection in the closing table has its FINs or RST"
            if tick - closing[1] < REORDER_WINDOW:
                self.expires_at = closing[1] + REORDER_WINDOW
                break
            expired.append((four, conn, closing))
        for four, conn, closing in expired:
            self.close(four, conn, closing[0], closing[2], out)

    def finish(self, ts: int) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for four, conn in list(self.live.items()):
            closing = conn.closing
            if closing is not None:  # its FINs or RST were in: closed by them, when they came
                self.close(four, conn, closing[0], closing[2], out)
            else:
                self.close(four, conn, ts, "end_of_capture", out)
        return out


def reassemble(
    segments: Iterable[TcpSegment | CaptureIssue],
    *,
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
) -> Iterator[StreamEvent]:
    """Turn capture-ordered segments into per-direction StreamChunk/StreamGap/StreamConflict/FlowEvent items.

    Events come out in capture order; each chunk is the new in-order bytes of one packet.
    `max_buffered_bytes` caps the out-of-order bytes held per direction: past it the direction
    is flushed (holes become "overflow" gaps) and an "overflow" FlowEvent is emitted.
    A StreamConflict comes when a retransmitted copy differs from bytes already taken (the
    first copy is kept), before or after the chunk that carries them.
    CaptureIssue items are passed through where they occur.
    """
    table = _Table(max_buffered_bytes)
    last_ts = 0
    for item in segments:
        if isinstance(item, TcpSegment):
            last_ts = item.timestamp_ns
            events = table.segment(item)
            if events:
                yield from events
        else:
            yield item
    yield from table.finish(last_ts)
