"""One direction of one TCP connection: sequence numbers in, ordered chunks and gaps out.

Owns: mapping 32-bit sequence numbers (with wrap-around) to 64-bit stream offsets, dropping
retransmitted bytes and trimming overlaps (first-seen bytes win), buffering out-of-order
segments up to a byte cap, and turning holes into `StreamGap`s when it has to give up on them.
Does not own connection identity, SYN/FIN/RST policy or the connection table (see `flows`).
"""

from __future__ import annotations

from bisect import bisect_right

from .model import ConnectionKey, Direction, StreamChunk, StreamGap

_MASK = 0xFFFFFFFF
_new_tuple = tuple.__new__
_HALF = 0x80000000


def offset_at(base_seq: int, offset: int, seq: int) -> int:
    """Stream offset of `seq` in a stream whose offset 0 is `base_seq` and which is at `offset`:
    the 32-bit value nearest to that position."""
    expected = (base_seq + offset) & _MASK
    return offset + (((seq - expected + _HALF) & _MASK) - _HALF)


class DirectionStream:
    """Reassembles one direction; a method that delivers appends the events to the ``out`` list it is handed."""

    __slots__ = ("_pieces", "_starts", "base_seq", "buffered", "cap", "conn", "direction", "isn", "offset")

    def __init__(self, conn: ConnectionKey, direction: Direction, cap: int) -> None:
        self.conn = conn
        self.direction = direction
        self.base_seq: int | None = None  # sequence number of stream offset 0
        self.isn: int | None = None
        self.offset = 0  # stream offset of the next byte to deliver
        self._starts: list[int] = []
        # Buffered pieces, sorted and disjoint: (start, end, data or None for cut bytes, ts, index)
        self._pieces: list[tuple] = []
        self.buffered = 0
        self.cap = cap

    def syn(self, seq: int) -> None:
        if self.base_seq is None:
            self.isn = seq
            self.base_seq = (seq + 1) & _MASK

    def offset_of(self, seq: int) -> int:
        """Stream offset of `seq`, taking the 32-bit value nearest to the current position."""
        assert self.base_seq is not None, "offsets are asked for once the stream has its first sequence number"
        return offset_at(self.base_seq, self.offset, seq)

    def add(self, seq: int, payload: bytes, missing: int, ts: int, index: int, out: list) -> bool:
        """Take one segment's payload; return False when the buffer cap was exceeded and flushed."""
        if self.base_seq is None:
            self.base_seq = seq  # capture started mid-connection: the first byte seen is offset 0
        start = self.offset_of(seq)
        end = start + len(payload) + missing
        offset = self.offset
        if end <= offset:
            return True  # a retransmission of bytes already delivered
        if start < offset:
            cut = offset - start
            if cut < len(payload):
                payload = payload[cut:]
            else:
                missing -= cut - len(payload)
                payload = b""
            start = offset
        if start == offset and not self._pieces:
            if payload:
                # StreamChunk(...) without the Python-level __new__ a named tuple adds: one per packet
                out.append(_new_tuple(StreamChunk, (self.conn, self.direction, start, payload, ts, index)))
            if missing:
                out.append(StreamGap(self.conn, self.direction, start + len(payload), missing, ts, "snaplen_cut"))
            self.offset = end
            return True
        if payload:
            self._insert(start, start + len(payload), payload, ts, index)
        if missing:
            self._insert(end - missing, end, None, ts, index)
        self._deliver(out)
        if self.buffered > self.cap:
            self.flush(out, "overflow")
            return False
        return True

    def _insert(self, s: int, e: int, data: bytes | None, ts: int, index: int) -> None:
        starts, pieces = self._starts, self._pieces
        i = bisect_right(starts, s) - 1
        pos = s
        if i >= 0 and pieces[i][1] > pos:
            pos = pieces[i][1]
        i += 1
        while pos < e:
            next_start = starts[i] if i < len(starts) else e
            if next_start > pos:
                stop = min(e, next_start)
                part = None if data is None else data[pos - s : stop - s]
                starts.insert(i, pos)
                pieces.insert(i, (pos, stop, part, ts, index))
                self.buffered += stop - pos
                i += 1
                pos = stop
            else:
                pos = max(pos, pieces[i][1])
                i += 1

    def _emit(self, piece: tuple, out: list) -> None:
        start, end, data, ts, index = piece
        if data is None:
            out.append(StreamGap(self.conn, self.direction, start, end - start, ts, "snaplen_cut"))
        else:
            out.append(StreamChunk(self.conn, self.direction, start, data, ts, index))
        self.buffered -= end - start
        self.offset = end

    def _deliver(self, out: list) -> None:
        pieces = self._pieces
        n = 0
        while n < len(pieces) and pieces[n][0] <= self.offset:
            self._emit(pieces[n], out)
            n += 1
        if n:
            del pieces[:n]
            del self._starts[:n]

    def acknowledged(self, ack_seq: int, out: list) -> None:
        """The receiver acknowledged up to `ack_seq`: holes before it were sent but not captured.

        They will never be filled (the peer has them, so nobody retransmits), so each becomes a
        "missing" gap now instead of holding back everything after it until the cap or the close.
        Only holes that end at a buffered piece at or before the ack are given up on.
        """
        pieces = self._pieces
        if not pieces or self.base_seq is None:
            return
        acked = self.offset_of(ack_seq)
        n = 0
        while n < len(pieces) and pieces[n][0] <= acked:
            piece = pieces[n]
            if piece[0] > self.offset:
                out.append(
                    StreamGap(self.conn, self.direction, self.offset, piece[0] - self.offset, piece[3], "missing")
                )
            self._emit(piece, out)
            n += 1
        if n:
            del pieces[:n]
            del self._starts[:n]
            self._deliver(out)

    def flush(self, out: list, reason: str = "missing") -> None:
        """Deliver everything buffered, each hole before a piece becoming a gap with `reason`."""
        for piece in self._pieces:
            if piece[0] > self.offset:
                out.append(StreamGap(self.conn, self.direction, self.offset, piece[0] - self.offset, piece[3], reason))
            self._emit(piece, out)
        self._pieces.clear()
        self._starts.clear()
        self.buffered = 0
