"""One TCP connection's segments classified as Wireshark's sequence analysis does.

Owns the running counts of one connection (``ConnectionTracker``: packets, bytes,
retransmissions, reordering, copies, gaps, the handshake) and what they freeze into
(``ConnectionStats``). Segments are classified the way Wireshark's sequence analysis does
(packet-tcp.c, ``tcp_analyze_sequence_number``), so the counts can be checked against
``tcp.analysis.retransmission`` and ``tcp.analysis.out_of_order``: a segment carrying data (or
SYN/FIN) that starts below the highest sequence number seen in its direction is a
retransmission (spurious: already acknowledged; fast: right after duplicate ACKs; otherwise by
timeout), unless it came within the handshake RTT (3 ms without a handshake) of the segment that
advanced the sequence and does not end where that one ended: then it is out of order. One-byte
keep-alives are neither. A retransmission that repeats a packet captured just before, byte for
byte, with nothing from the peer between, is also counted as a copy (the packet seen again on
another interface).

Does not own which connection a segment belongs to, its gaps or how it ended: the caller
(``stats``) tells the tracker, from ``reassemble``'s events.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from ..capture.model import ACK, FIN, RST, SYN, TcpSegment
from .model import ConnectionKey, Direction, StreamConflict, StreamGap

_MASK = 0xFFFFFFFF
_HALF = 0x80000000
OUT_OF_ORDER_WITHOUT_RTT_NS = 3_000_000  # Wireshark's threshold when no handshake was seen
# A packet repeated within this, with nothing from the peer between, is a copy, not a resend: an
# interface's copy comes microseconds after; a resend by timeout comes no sooner than Linux's
# minimum RTO (200 ms) or a tail loss probe (10 ms), a fast one after the peer's duplicate ACKs.
COPY_WINDOW_NS = 1_000_000
_RECENT = 8  # packets of a direction a copy is looked for among
FAST_RETRANSMISSION_NS = 20_000_000  # a fast retransmission follows duplicate ACKs within 20 ms
ACKED_UNSEEN = -1


@dataclass(frozen=True, slots=True)
class DirectionStats:
    """What one direction of a connection carried."""

    direction: Direction
    packets: int  # every segment, pure ACKs and retransmissions included
    payload_bytes: int  # TCP payload on the wire, retransmissions included (tshark's tcp.len)
    retransmissions: int
    # packets whose copy of bytes already read differed from them (``reassemble``'s StreamConflicts)
    conflicting_retransmissions: int
    out_of_order: int
    gaps: int  # holes reassembly had to give up on (never captured, cut by snaplen, overflow)
    bytes_missing: int
    # of the retransmissions, those that repeat a packet captured less than COPY_WINDOW_NS before,
    # byte for byte: the packet seen again on another interface (-i any, a pod's and its node's)
    copies: int = 0


@dataclass(frozen=True, slots=True)
class ConnectionStats:
    """One TCP connection as its segments show it (``key`` as ``reassemble`` numbers it)."""

    key: ConnectionKey
    first_ns: int
    last_ns: int
    first_packet: int  # index of its first packet in the capture
    initiator: Direction | None  # the direction of the SYN, when seen
    syn_ns: int | None  # the (last) SYN before the SYN/ACK
    syn_ack_ns: int | None
    handshake_ack_ns: int | None  # the initiator's first ACK after the SYN/ACK
    ended: str  # reassemble's close detail: fin, reset, reused or end_of_capture
    ended_ns: int
    closed_by: Direction | None  # who sent the first FIN, or the RST
    a_to_b: DirectionStats
    b_to_a: DirectionStats

    @property
    def handshake_rtt_ns(self) -> int | None:
        """SYN to the ACK of the SYN/ACK (Wireshark's iRTT); None unless the handshake was captured."""
        if self.syn_ns is None or self.syn_ack_ns is None or self.handshake_ack_ns is None:
            return None
        return self.handshake_ack_ns - self.syn_ns

    def sent_by(self, ip: str, port: int) -> DirectionStats:
        """The stats of the direction whose sender is (ip, port)."""
        d = self.a_to_b.direction
        return self.a_to_b if (d.src_ip, d.src_port) == (ip, port) else self.b_to_a


def _copy(seg: TcpSegment, recent: Iterable[TcpSegment], peer_ns: int) -> bool:
    """Whether ``seg`` repeats one of ``recent`` captured less than COPY_WINDOW_NS before it and
    after the peer's last packet (``peer_ns``): a resend answers something of the peer's, a
    fast retransmission its duplicate ACKs, an interface's copy nothing."""
    same = (seg.seq, seg.ack, seg.flags, seg.missing, seg.payload)
    near = (r for r in recent if 0 <= seg.timestamp_ns - r.timestamp_ns < COPY_WINDOW_NS and r.timestamp_ns >= peer_ns)
    return any((r.seq, r.ack, r.flags, r.missing, r.payload) == same for r in near)


def _before(a: int, b: int) -> bool:
    """Sequence number a comes before b (32-bit serial arithmetic)."""
    return ((a - b) & _MASK) >= _HALF


class _Side:
    __slots__ = (
        "bytes_missing",
        "conflicts",
        "copies",
        "direction",
        "dupacks",
        "gaps",
        "last_ns",
        "lastack",
        "lastack_ns",
        "max_to_be_acked",
        "nextseq",
        "nextseq_ns",
        "out_of_order",
        "packets",
        "payload_bytes",
        "recent",
        "retransmissions",
    )

    def __init__(self, direction: Direction) -> None:
        self.direction = direction
        self.packets = self.payload_bytes = self.retransmissions = self.out_of_order = 0
        self.gaps = self.bytes_missing = self.conflicts = self.copies = 0
        self.recent: deque[TcpSegment] = deque(maxlen=_RECENT)  # the last packets, to find copies
        self.last_ns = -1  # when this side's last packet was captured
        self.nextseq: int | None = None  # one past the highest sequence number sent
        self.nextseq_ns = 0
        self.max_to_be_acked: int | None = None  # the end of the contiguous data seen (maxseqtobeacked)
        self.lastack: int | None = None  # the last acknowledgement number this side sent
        self.lastack_ns = 0
        # Duplicate ACKs since the acknowledgement number last changed; ACKED_UNSEEN once this side
        # acknowledged data the capture never showed.
        self.dupacks = 0

    def frozen(self) -> DirectionStats:
        return DirectionStats(
            self.direction,
            self.packets,
            self.payload_bytes,
            self.retransmissions,
            self.conflicts,
            self.out_of_order,
            self.gaps,
            self.bytes_missing,
            self.copies,
        )


class ConnectionTracker:
    """The running counts of one connection, told its segments, gaps, conflicts and ending."""

    __slots__ = (
        "closed_by",
        "ended",
        "ended_ns",
        "first_ns",
        "first_packet",
        "handshake_ack_ns",
        "initiator",
        "key",
        "last_ns",
        "sides",
        "syn_ack_ns",
        "syn_ns",
    )

    def __init__(self, key: ConnectionKey, initiator: Direction | None, ns: int) -> None:
        self.key = key
        a_to_b = Direction(key.a_ip, key.a_port, key.b_ip, key.b_port)
        b_to_a = Direction(key.b_ip, key.b_port, key.a_ip, key.a_port)
        self.sides = {(key.a_ip, key.a_port): _Side(a_to_b), (key.b_ip, key.b_port): _Side(b_to_a)}
        self.first_ns = self.last_ns = ns
        self.first_packet = -1
        self.initiator = initiator
        self.syn_ns: int | None = None
        self.syn_ack_ns: int | None = None
        self.handshake_ack_ns: int | None = None
        self.ended = "end_of_capture"
        self.ended_ns = ns
        self.closed_by: Direction | None = None

    def segment(self, seg: TcpSegment) -> None:
        ns, flags = seg.timestamp_ns, seg.flags
        if self.first_packet < 0:
            self.first_ns, self.first_packet = ns, seg.packet_index
        self.last_ns = ns
        fwd, rev = self.sides[(seg.src_ip, seg.src_port)], self.sides[(seg.dst_ip, seg.dst_port)]
        seglen = len(seg.payload) + seg.missing
        fwd.packets += 1
        fwd.payload_bytes += seglen
        self._handshake(seg, ns, flags)
        if flags & ACK:
            if seglen == 0 and not flags & (SYN | FIN | RST) and seg.seq == fwd.nextseq and seg.ack == fwd.lastack:
                # (Wireshark also wants an unchanged window; segments do not carry it)
                fwd.dupacks = 1 if fwd.dupacks == ACKED_UNSEEN else fwd.dupacks + 1
            elif seg.ack != fwd.lastack:
                fwd.dupacks = 0
            self._acked_unseen(rev, seg.ack)
        resent = fwd.retransmissions
        self._classify(fwd, rev, seg.seq, seglen, flags, ns)
        if fwd.retransmissions > resent and _copy(seg, fwd.recent, rev.last_ns):
            fwd.copies += 1
        fwd.recent.append(seg)
        fwd.last_ns = ns
        if flags & ACK:
            fwd.lastack, fwd.lastack_ns = seg.ack, ns

    def _handshake(self, seg: TcpSegment, ns: int, flags: int) -> None:
        if self.handshake_ack_ns is not None:
            return
        if flags & SYN and not flags & ACK:
            self.syn_ns = ns
        elif flags & SYN:
            if self.syn_ack_ns is None:
                self.syn_ack_ns = ns
        elif flags & ACK and self.syn_ack_ns is not None and self.syn_ns is not None:
            i = self.initiator
            if i is not None and (seg.src_ip, seg.src_port) == (i.src_ip, i.src_port):
                self.handshake_ack_ns = ns

    @staticmethod
    def _acked_unseen(rev: _Side, ack: int) -> None:
        """An ACK beyond the data seen from the peer: segments the capture missed.

        Wireshark then moves the peer's boundary to what it has seen, or, when there is nothing
        more to move, marks the peer's duplicate-ACK count, which its fast-retransmission test
        (``dupacknum >= 2``, unsigned) then takes as satisfied; counts are checked against it.
        """
        boundary = rev.max_to_be_acked
        if boundary is None or not _before(boundary, ack) or rev.nextseq is None:
            return
        if boundary > rev.nextseq:
            rev.max_to_be_acked = rev.nextseq
        else:
            rev.dupacks = ACKED_UNSEEN

    def _classify(self, fwd: _Side, rev: _Side, seq: int, seglen: int, flags: int, ns: int) -> None:
        syn_fin = 1 if flags & (SYN | FIN) else 0
        nextseq = fwd.nextseq
        if seglen or syn_fin:
            keep_alive = (
                seglen <= 1 and not flags & (SYN | FIN | RST) and nextseq is not None and seq == (nextseq - 1) & _MASK
            )
            if not keep_alive:
                self._retransmission_or_reordering(fwd, rev, seq, seglen, syn_fin, ns)
        end = (seq + seglen + syn_fin) & _MASK
        if nextseq is None or _before(nextseq, end):
            fwd.nextseq, fwd.nextseq_ns = end, ns
        if fwd.max_to_be_acked is None or seq == fwd.max_to_be_acked:
            fwd.max_to_be_acked = fwd.nextseq

    def _retransmission_or_reordering(
        self, fwd: _Side, rev: _Side, seq: int, seglen: int, syn_fin: int, ns: int
    ) -> None:
        nextseq = fwd.nextseq
        not_advanced = nextseq is not None and _before(seq, nextseq)
        if seglen > 1 and nextseq is not None and (nextseq - 1) & _MASK == seq:
            not_advanced = False  # new data after a zero-window probe
        end = (seq + seglen) & _MASK
        if seglen and rev.lastack is not None and not _before(rev.lastack, end):
            fwd.retransmissions += 1  # spurious: the peer had acknowledged all of it
            return
        if (
            not_advanced
            and (rev.dupacks >= 2 or rev.dupacks == ACKED_UNSEEN)
            and rev.lastack == seq
            and ns - rev.lastack_ns < FAST_RETRANSMISSION_NS
        ):
            fwd.retransmissions += 1  # fast retransmission
            return
        rtt = self.handshake_rtt_ns
        threshold = rtt if rtt else OUT_OF_ORDER_WITHOUT_RTT_NS
        if not_advanced and ns - fwd.nextseq_ns < threshold and nextseq != (end + syn_fin) & _MASK:
            fwd.out_of_order += 1
        elif not_advanced:
            fwd.retransmissions += 1

    @property
    def handshake_rtt_ns(self) -> int | None:
        if self.syn_ns is None or self.handshake_ack_ns is None:
            return None
        return self.handshake_ack_ns - self.syn_ns

    def gap(self, ev: StreamGap) -> None:
        side = self.sides[(ev.direction.src_ip, ev.direction.src_port)]
        side.gaps += 1
        side.bytes_missing += ev.length

    def conflict(self, ev: StreamConflict) -> None:
        self.sides[(ev.direction.src_ip, ev.direction.src_port)].conflicts += 1

    def frozen(self) -> ConnectionStats:
        k = self.key
        return ConnectionStats(
            key=k,
            first_ns=self.first_ns,
            last_ns=self.last_ns,
            first_packet=self.first_packet,
            initiator=self.initiator,
            syn_ns=self.syn_ns,
            syn_ack_ns=self.syn_ack_ns,
            handshake_ack_ns=self.handshake_ack_ns,
            ended=self.ended,
            ended_ns=self.ended_ns,
            closed_by=self.closed_by,
            a_to_b=self.sides[(k.a_ip, k.a_port)].frozen(),
            b_to_a=self.sides[(k.b_ip, k.b_port)].frozen(),
        )
