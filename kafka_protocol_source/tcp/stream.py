"""One direction of one TCP connection: sequence numbers in, ordered chunks and gaps out.

Owns: mapping 32-bit sequence numbers (with wrap-around) to 64-bit stream offsets, dropping
retransmitted bytes and trimming overlaps (first-seen bytes win), buffering out-of-order
segments up to a byte cap (held in ``held_bytes``), and turning holes into `StreamGap`s when it
has to give up on them.

A capture's order is not always the order on the wire: ``tcpdump -i any``, several capture
queues or merged interfaces can write a segment a few packets after the ACK that covers it, or
after its sender's FIN. So a hole the receiver has acknowledged is given up on only once it has
stayed open for ``REORDER_WINDOW`` packets of the capture; a segment that comes within them fills
it as if it had come in order.

The same holds where a direction starts without its SYN (a capture joined mid-connection): the
first segment written is not always the first sent, and a SYN can be written after data sent
after it. Such a start is provisional for ``REORDER_WINDOW`` packets of the capture. Nothing is
delivered until then, and a segment or SYN from before it moves offset 0 back to itself, so its
bytes are delivered instead of being taken for a retransmission of bytes sent before the capture.
Where both sides of a connection start so, ``flows`` settles them together, at the later of the
two ticks, and delivers what they held in capture order across the two.

Bytes the snaplen cut from a packet are a "snaplen_cut" gap, unless a fuller copy of it may
follow: a capture merged from interfaces of different snaplens has each packet twice, the cut
copy sometimes first. Once a fuller copy has been seen after a cut one anywhere in the capture
(``CutCopies``), cut bytes are held for ``REORDER_WINDOW`` packets, and a copy that brings them
fills them in.

A retransmitted copy of bytes the stream holds is compared with the copy it has, and where they
differ (a middlebox's rewrite, a buggy stack, a corrupt capture, two taps merged) a
``StreamConflict`` says which bytes; the first copy is kept, as tshark keeps it. Held are the
bytes buffered out of order and those of the last chunk delivered (a reference kept per
direction): a retransmission most often repeats the last packet. Bytes delivered before that are
no longer held, so a differing copy of them cannot be told and nothing is said of it (nor of a
copy of a closed connection's bytes, which ``flows`` drops). Only a segment that overlaps bytes
already taken is compared, so in-order traffic pays one reference per packet.

Does not own connection identity, SYN/FIN/RST policy or the connection table (see `flows`).
"""

from __future__ import annotations

from .copies import differing, widen
from .held_bytes import HeldBytes
from .model import ConnectionKey, Direction, StreamChunk, StreamConflict, StreamGap

_MASK = 0xFFFFFFFF
_new_tuple = tuple.__new__
_HALF = 0x80000000
# Packets of the capture (all connections) a hole may stay open once acknowledged, for the
# segment written late to arrive. Misordered captures put it a few packets late; a hole that is
# really missing only waits this long (or until the connection ends) before it becomes a gap.
REORDER_WINDOW = 256


def offset_at(base_seq: int, offset: int, seq: int) -> int:
    """Stream offset of `seq` in a stream whose offset 0 is `base_seq` and which is at `offset`:
    the 32-bit value nearest to that position."""
    expected = (base_seq + offset) & _MASK
    return offset + (((seq - expected + _HALF) & _MASK) - _HALF)


_MAX_OTHER_ISNS = 4  # other SYN-ACK ISNs kept for one side


class CutCopies:
    """Shared by a capture's streams: whether a fuller copy of a packet has come after a copy
    the snaplen cut (then cut bytes are held for a while, see the module's docstring)."""

    __slots__ = ("follow",)

    def __init__(self) -> None:
        self.follow = False


class DirectionStream:
    """Reassembles one direction; a method that delivers appends the events to the ``out`` list it is handed."""

    __slots__ = (
        "_cut_copies",
        "_early_conflicts",
        "_last",
        "_last_cut",
        "_other_isns",
        "_settle_until",
        "_stuck_at",
        "_stuck_since",
        "base_seq",
        "cap",
        "conn",
        "direction",
        "end_seq",
        "first_ns",
        "held",
        "isn",
        "offset",
        "peer_ack",
        "reset_end",
    )

    def __init__(
        self, conn: ConnectionKey, direction: Direction, cap: int, cut_copies: CutCopies | None = None
    ) -> None:
        self.conn = conn
        self.direction = direction
        self.base_seq: int | None = None  # sequence number of stream offset 0
        self.isn: int | None = None
        self.offset = 0  # stream offset of the next byte to deliver
        self.held = HeldBytes()  # bytes buffered out of order
        self.cap = cap
        # The sequence number of the sender's FIN (or RST), before which its bytes end.
        self.end_seq: int | None = None
        self.reset_end = False  # end_seq is a RST's: a FIN after it says where the bytes end instead
        self.peer_ack: int | None = None  # the furthest acknowledgment number the receiver sent
        # The offset delivery stopped at when a hole before it was first acknowledged, and the
        # tick then (see REORDER_WINDOW).
        self._stuck_at, self._stuck_since = -1, 0
        # While offset 0 is the first segment seen, not the SYN's: the tick until which
        # nothing is delivered and earlier bytes move it back (-1: offset 0 is settled).
        self._settle_until = -1
        self.first_ns: int | None = None  # capture time of the first bytes of a stream whose SYN was not seen
        self._cut_copies = CutCopies() if cut_copies is None else cut_copies
        self._last_cut: tuple[int, int] | None = None  # the bytes of the last cut given up as a gap
        self._last: StreamChunk | None = None  # the last chunk delivered (its bytes are compared with copies)
        # Conflicts found while offset 0 is provisional: said once it is settled (it may move).
        self._early_conflicts: list[tuple[int, int, int, int]] = []
        # Other ISNs this side's SYN-ACKs gave before any byte (a fresh SYN cookie for a
        # retransmitted SYN, a restarted middlebox): the peer's ACK, or the first byte, picks one.
        self._other_isns: tuple[int, ...] = ()

    def takes_syn(self, seq: int, tick: int, ts: int, peer_first_ns: int | None) -> bool:
        """Whether a SYN of ``seq`` from this side, captured at ``ts`` and read at ``tick``, is
        this stream's own: its ISN (a copy, as a second interface captures it). For a stream whose
        SYN was not seen: one captured before any byte of the connection (written late: another
        interface's copy appended after the first's, a capture written out of order), and, where
        this side has bytes, one just before them so captured (or while their start is
        provisional), or one right before the first of them. Any other is a new use of the
        4-tuple. A time of 0 is unknown: it does not rule a SYN out."""
        if self.isn is not None:
            return self.isn == seq
        if self.base_seq is None:
            return peer_first_ns is None or not ts or ts <= peer_first_ns
        start = self._syn_start(seq)
        if start is None:
            return False
        written_late = tick < self._settle_until or not ts or (self.first_ns is not None and ts <= self.first_ns)
        return start == 0 or written_late  # (0: the byte after it is the first byte seen)

    def syn(self, seq: int) -> None:
        if self.base_seq is None:
            self.isn = seq
            self.base_seq = (seq + 1) & _MASK
        elif self._settle_until >= 0 and (start := self._syn_start(seq)) is not None:
            self.isn = seq  # written after data sent after it: the stream starts at the SYN after all
            self._rebase(start)
        elif seq != self.isn and self._untouched() and len(self._other_isns) < _MAX_OTHER_ISNS:
            self._other_isns += (seq,)

    def _untouched(self) -> bool:
        """No byte of this side has come yet."""
        return self.offset == 0 and not self.held.pieces and self._last is None

    def _take_isn_of(self, first_seq: int) -> None:
        """The peer's first acknowledgment, or this side's first byte, names the stream's ISN: an
        other ISN whose next byte is ``first_seq`` is taken; the first ISN stays otherwise."""
        isn = (first_seq - 1) & _MASK
        if isn in self._other_isns and self._untouched():
            self.isn, self.base_seq = isn, first_seq
        self._other_isns = ()

    def _syn_start(self, seq: int) -> int | None:
        """The offset where the stream would begin were ``seq`` its SYN's: at or before its first
        byte seen, within the bytes it may hold; None elsewhere."""
        start = self.offset_of((seq + 1) & _MASK)
        return start if -self.cap <= start <= 0 else None

    def offset_of(self, seq: int) -> int:
        """Stream offset of `seq`, taking the 32-bit value nearest to the current position."""
        assert self.base_seq is not None, "offsets are asked for once the stream has its first sequence number"
        return offset_at(self.base_seq, self.offset, seq)

    def add(self, seq: int, payload: bytes, missing: int, ts: int, index: int, out: list, tick: int) -> bool:
        """Take one segment's payload; return False when the buffer cap was exceeded and flushed.
        ``index``: its packet's, for the events; ``tick``: the capture's packets read so far, the
        clock ``REORDER_WINDOW`` is counted on (packet indices of a session's files jump)."""
        if self.base_seq is None:
            self._start_provisionally(seq, payload, missing, ts, index, tick)
            return True
        if self._other_isns:
            self._take_isn_of(seq)
        start = self.offset_of(seq)
        end = start + len(payload) + missing
        offset = self.offset
        if start < offset and self._settle_until >= 0 and offset - start <= self.cap:
            self._rebase(start)
            start, end = 0, end - start
        if end <= offset:
            if payload and not (len(payload) == 1 and start == offset - 1):  # (that: a keep-alive,
                self._repeated(start, payload, ts, index, out)  # whose byte may be any: RFC 1122 4.2.3.6)
            return True  # a retransmission of bytes already delivered
        conflict = None
        if start < offset:
            if payload and self._last is not None:
                conflict = self._compare_delivered(start, payload)
            cut = offset - start
            if cut < len(payload):
                payload = payload[cut:]
            else:
                missing -= cut - len(payload)
                payload = b""
            start = offset
        if start == offset and not self.held.pieces:
            if conflict is not None:
                self._conflict(conflict, ts, index, out)
            if payload:
                # StreamChunk(...) without the Python-level __new__ a named tuple adds: one per packet
                chunk = _new_tuple(StreamChunk, (self.conn, self.direction, start, payload, ts, index))
                out.append(chunk)
                self._last = chunk
            self.offset = end
            if missing:
                self._cut(end - missing, end, ts, tick, out)
            return True
        return self._out_of_order(start, end, payload, missing, conflict, ts, index, out, tick)

    def _out_of_order(
        self,
        start: int,
        end: int,
        payload: bytes,
        missing: int,
        conflict: tuple[int, int] | None,
        ts: int,
        index: int,
        out: list,
        tick: int,
    ) -> bool:
        """``add`` for bytes that do not follow on from the offset, or come while others are held
        (``conflict``: where the part of the segment already delivered differed)."""
        held = self.held
        if payload:
            if held.uncut(start, start + len(payload)):
                self._cut_copies.follow = True  # fuller copies come after cut ones in this capture
            conflict = widen(conflict, held.insert(start, start + len(payload), payload, ts, index))
        if conflict is not None:
            self._conflict(conflict, ts, index, out)
        if missing:
            held.insert(end - missing, end, None, ts, tick)
        if self._settle_until >= 0:
            if tick < self._settle_until and held.count <= self.cap:
                return True
            self._settled(out)
        self._deliver(out, tick)
        if held.count > self.cap:
            self.flush(out, "overflow")
            return False
        return True

    def _repeated(self, start: int, payload: bytes, ts: int, index: int, out: list) -> None:
        """A copy of bytes all delivered already (from ``start``)."""
        if self._last_cut is not None:
            self._copy_of_cut(self._last_cut, start, start + len(payload))
        if self._last is not None and (conflict := self._compare_delivered(start, payload)) is not None:
            self._conflict(conflict, ts, index, out)

    def _compare_delivered(self, start: int, payload: bytes) -> tuple[int, int] | None:
        """Where a copy of delivered bytes from ``start`` differs from the last chunk delivered
        (bytes delivered before it are no longer held: nothing is said of them)."""
        last = self._last
        assert last is not None, "called once a chunk was delivered"
        at, data = last[2], last[3]
        if start == at and len(payload) == len(data) and payload == data:
            return None  # the usual: the last packet again, the same
        return differing(payload, start, data, at, max(start, at), min(start + len(payload), at + len(data)))

    def _conflict(self, span: tuple[int, int], ts: int, index: int, out: list) -> None:
        """Bytes ``span`` came again, different: said now, or once offset 0 is settled."""
        if self._settle_until >= 0:
            self._early_conflicts.append((span[0], span[1], ts, index))
        else:
            out.append(StreamConflict(self.conn, self.direction, span[0], span[1] - span[0], ts, index))

    @property
    def settles_at(self) -> int:
        """The tick at which a provisional offset 0 is settled; -1 once it is."""
        return self._settle_until

    def wait_until(self, tick: int) -> None:
        """A provisional offset 0 stays provisional, and its bytes held, until ``tick`` at least."""
        if self._settle_until >= 0:
            self._settle_until = max(self._settle_until, tick)

    def settle(self, out: list, tick: int | None) -> None:
        """Offset 0 is settled now: what is held from it on is delivered."""
        if self._settle_until >= 0:
            self._settled(out)
            self._deliver(out, tick)

    def _settled(self, out: list) -> None:
        """Offset 0 stays where it is now: the conflicts found before are said."""
        self._settle_until = -1
        for s, e, ts, index in self._early_conflicts:
            out.append(StreamConflict(self.conn, self.direction, s, e - s, ts, index))
        self._early_conflicts.clear()

    def _start_provisionally(self, seq: int, payload: bytes, missing: int, ts: int, index: int, tick: int) -> None:
        """Capture started mid-connection: the first byte seen is offset 0, until a segment from
        before it comes (see the module's docstring). Held until then."""
        self.base_seq = seq
        self._settle_until = tick + REORDER_WINDOW
        self.first_ns = ts
        if payload:
            self.held.insert(0, len(payload), payload, ts, index)
        if missing:
            self.held.insert(len(payload), len(payload) + missing, None, ts, tick)

    def _rebase(self, start: int) -> None:
        """Offset 0 moves to ``start`` (at or before it; nothing is delivered yet)."""
        assert self.base_seq is not None and self.offset == 0, "a provisional start has delivered nothing"
        if start:
            shift = -start
            self.base_seq = (self.base_seq + start) & _MASK
            self.held.shift(shift)
            self._early_conflicts = [(s + shift, e + shift, ts, i) for s, e, ts, i in self._early_conflicts]

    def _cut(self, s: int, e: int, ts: int, tick: int, out: list) -> None:
        """Bytes [s, e) the snaplen cut, right at the offset: a gap, or held while a fuller copy
        may bring them (see ``CutCopies``)."""
        if self._cut_copies.follow:
            self.held.insert(s, e, None, ts, tick)
            self.offset = s
        else:
            out.append(StreamGap(self.conn, self.direction, s, e - s, ts, "snaplen_cut"))
            self._last_cut = (s, e)

    def _copy_of_cut(self, last_cut: tuple[int, int], s: int, e: int) -> None:
        """Bytes [s, e) came again after the offset passed them: if they are bytes the last cut
        gave up as a gap, fuller copies come after cut ones in this capture (too late for these)."""
        if s < last_cut[1] and e > last_cut[0]:
            self._cut_copies.follow = True

    def _emit(self, piece: tuple, out: list) -> None:
        start, end, data, ts, index = piece
        if data is None:
            out.append(StreamGap(self.conn, self.direction, start, end - start, ts, "snaplen_cut"))
        else:
            chunk = StreamChunk(self.conn, self.direction, start, data, ts, index)
            out.append(chunk)
            self._last = chunk
        self.held.count -= end - start
        self.offset = end

    def _deliver(self, out: list, tick: int | None = None) -> None:
        """Emit the buffered pieces that follow on from the offset; with ``tick`` (now), cut
        bytes a fuller copy may still bring stop it (see ``CutCopies``)."""
        pieces = self.held.pieces
        n = 0
        while n < len(pieces) and pieces[n][0] <= self.offset:
            piece = pieces[n]
            if piece[2] is None and tick is not None and tick - piece[4] < REORDER_WINDOW and self._cut_copies.follow:
                break
            self._emit(piece, out)
            n += 1
        if n:
            self.held.drop(n)

    def acknowledged(self, ack_seq: int, tick: int, out: list) -> None:
        """The receiver acknowledged up to `ack_seq` (at ``tick``, see ``add``): holes before it
        were sent, and the receiver has them.

        Nobody will retransmit them, so once a hole has stayed open for ``REORDER_WINDOW``
        packets since it was first acknowledged (a segment the capture wrote late comes within
        them), each acknowledged hole becomes a "missing" gap, instead of holding back everything
        after it until the cap or the close. Only holes that end at a buffered piece at or
        before the ack are given up on. (Bytes acknowledged past all those captured, a lost
        tail, wait for the close: a copy of them may come much later, as another interface's
        appended.)
        """
        pieces = self.held.pieces
        if not pieces or self.base_seq is None:
            return
        if self._settle_until >= 0:
            if tick < self._settle_until:
                return
            self._settled(out)
            self._deliver(out, tick)
            if not pieces:
                return
        acked = self.offset_of(ack_seq)
        if pieces[0][0] > acked:
            return
        if self._stuck_at != self.offset:
            self._stuck_at, self._stuck_since = self.offset, tick
            return
        if tick - self._stuck_since < REORDER_WINDOW:
            return
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
            self.held.drop(n)
            self._deliver(out)

    def _lost_tail(self, acked: int) -> bool:
        """Whether bytes acknowledged up to stream offset ``acked`` lie past all this side's bytes
        captured, as lost ones do: not for a side of which no byte was captured (one direction
        of a connection taken, its other side's ACKs alone say it spoke), nor for the one past
        its bytes a FIN's acknowledgment covers, nor further than the out-of-order cap."""
        return 1 < acked - self.offset <= self.cap and self._last is not None

    def acked(self, ack: int) -> None:
        """The receiver acknowledged up to ``ack`` (an older duplicate ACK written late says less)."""
        peer_ack = self.peer_ack
        if peer_ack is None or (ack - peer_ack) & _MASK < _HALF:
            self.peer_ack = ack
        if self._other_isns:
            self._take_isn_of(ack)

    def ended(self, seq: int, always: bool = False) -> None:
        """The sender's FIN (or, `always`, RST): its bytes end before `seq` (its own sequence
        number; a RST after the FIN comes one later, as the FIN takes one). A FIN that comes
        after every byte before it (the usual) is not kept: nothing is to come. A FIN after a
        RST (a reset the endpoints ignored: out of their window, or a middlebox's) replaces it."""
        if always:
            if self.end_seq is None:
                self.end_seq, self.reset_end = seq, True
            return
        if self.end_seq is not None and not self.reset_end:
            return
        self.reset_end = False
        at_next = self.base_seq is not None and (self.base_seq + self.offset) & _MASK == seq
        self.end_seq = None if at_next else seq

    def _end(self) -> int | None:
        """The stream offset the sender's FIN or RST says its bytes end at, where that is
        plausible: not before what was delivered, nor further past it than the out-of-order cap."""
        end_seq, base_seq = self.end_seq, self.base_seq
        if end_seq is None or base_seq is None:
            return None
        end = offset_at(base_seq, self.offset, end_seq)
        return end if self.offset <= end <= self.offset + self.cap else None

    def past_end(self, seq: int) -> int | None:
        """How far past the sender's FIN or RST bytes from `seq` on start (0: right where it said
        its bytes end); None when they do not lie past it."""
        end = self._end()
        if end is None:
            return None
        beyond = self.offset_of(seq) - end
        return beyond if beyond >= 0 else None

    def go_on(self) -> None:
        """The sender's FIN or RST did not end its bytes after all (more came right after it)."""
        self.end_seq = None

    def pending(self) -> bool:
        """Whether bytes the sender sent before its FIN are still to come (or held behind a hole)."""
        if self.held.pieces:
            return True
        if self.end_seq is None:
            return False
        end = self._end()
        return end is not None and end > self.offset

    def flush(self, out: list, reason: str = "missing") -> None:
        """Deliver everything buffered, each hole before a piece becoming a gap with `reason`."""
        self._settled(out)
        for piece in self.held.pieces:
            if piece[0] > self.offset:
                out.append(StreamGap(self.conn, self.direction, self.offset, piece[0] - self.offset, piece[3], reason))
            self._emit(piece, out)
        self.held.clear()

    def close(self, out: list, ts: int) -> None:
        """The connection is over: deliver everything buffered (holes as gaps), then account for
        the bytes the sender's FIN says it sent that never came, as a gap at `ts`. A RST's
        sequence number proves less (a reset out of the receiver's window is ignored by it): when
        the receiver's acknowledgments were captured, only bytes they cover are missing."""
        if self.held.pieces:
            self.flush(out)
        end = self._end() if self.end_seq is not None else None
        if end is not None and self.reset_end and self.peer_ack is not None:
            end = min(end, max(self.offset, self.offset_of(self.peer_ack)))
        elif end is None and self.peer_ack is not None and self.base_seq is not None:
            acked = self.offset_of(self.peer_ack)
            end = acked if self._lost_tail(acked) else None
        if end is not None and end > self.offset:
            out.append(StreamGap(self.conn, self.direction, self.offset, end - self.offset, ts, "missing"))
            self.offset = end
