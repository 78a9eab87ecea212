"""One TCP connection seen as Kafka: which side is the client, is it Kafka at all, and framing.

Owns the decisions made before pairing. The client is the side talking to a configured broker
port, else the side that sent the SYN, else the side whose bytes hold a confirmed request start
anywhere (a capture usually joins connections mid-stream, often mid-frame). A connection on a
configured port is Kafka (or TLS); on any other port it is Kafka only if the client's bytes hold
a confirmed request start (``sniff``: a header of a known api and version, confirmed by what
follows it), and otherwise it is left out. Until both are decided, events wait in a bounded
backlog. Frames then go to ``pairing.Pairer``.

Bytes a gap left out (a small snaplen cuts nearly every frame) keep their place while deciding, so
frame sizes still lead from packet to packet; a request start whose frame runs into such a hole
counts only once the other side answers its correlation id.
"""

from __future__ import annotations

import itertools
import struct
from bisect import bisect_right
from functools import partial

from ..tcp import Direction, StreamChunk, StreamConflict, StreamGap
from .model import LEFT_AT_END, TLS, Exchange
from .pairing import Pairer
from .sniff import (
    CONFIRMED,
    StartCheck,
    awaited_response,
    chained_ids,
    chained_requests,
    first_confirmed,
    kafka_like,
    looks_like_tls,
    read_request_header,
    request_cut_start,
    request_ids_at,
    request_start_check,
    response_cut_start,
    response_ids_at,
    response_start_check,
)
from .splitter import DirectionFramer

_SIZE = struct.Struct(">i")
BIG_HOLE = 1 << 16  # a gap longer than this starts a side's look afresh (see _leave_hole)
_HOLE = b"~"  # what stands for a byte the capture does not have while deciding (0x7e7e7e7e: 2 GB)
BACKLOG_LIMIT = 1 << 20  # bytes held while deciding whether a flow on an unknown port is Kafka
# Responses in a row that make a side whose peer's bytes were not captured Kafka (one fewer when
# its SYN/ACK says it is the server).
MIN_RESPONSE_RUN = 3
# What to say of a frame cut short, and of a request left unanswered, by the way a connection ended.
_CUT_BY = {
    "end_of_capture": "the capture ended inside this frame",
    "reset": "the connection was reset (RST) inside this frame",
    "fin": "the connection was closed (FIN) inside this frame",
    "reused": "the connection was replaced inside this frame",
}
_LEFT_BY = {
    "end_of_capture": LEFT_AT_END,
    "reset": "no response before the connection was reset (RST)",
    "fin": "no response before the connection was closed (FIN)",
    "reused": "no response before the connection was replaced by a new one",
}


def _full(head: bytearray) -> bool:
    return len(head) >= BACKLOG_LIMIT


def reverse(d: Direction) -> Direction:
    return Direction(d.dst_ip, d.dst_port, d.src_ip, d.src_port)


def address(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class Connection:
    def __init__(self, key, ctx, initiator: Direction | None):
        self.key, self.ctx, self.initiator = key, ctx, initiator
        self.client: Direction | None = None
        self.kafka: bool | None = None
        self.port_matched = False
        self.tls = False
        self.bytes_seen: dict[Direction, int] = {}
        self.backlog: list = []
        self.backlog_bytes = 0
        self.first_bytes: dict[Direction, bytearray] = {}
        self.scan_resume: dict[Direction, int] = {}
        self.chunk_ends: dict[Direction, set[int]] = {}  # positions in first_bytes where a packet's bytes end
        self.holes: dict[Direction, list[tuple[int, int]]] = {}  # [start, end) in first_bytes not captured
        self.hole_ends: dict[Direction, list[int]] = {}  # their ends, in order (for bisect)
        self.evidence: dict[Direction, tuple] = {}  # per side, the last _request_evidence and what it was for
        self.framers: dict[Direction, DirectionFramer] = {}
        self.pairer: Pairer | None = None
        self.first_ns: int | None = None
        self.first_packet: int | None = None

    # -- events from the tcp stage ----------------------------------------------------

    def chunk(self, ev: StreamChunk) -> list[Exchange]:
        if self.first_ns is None:
            self.first_ns, self.first_packet = ev.timestamp_ns, ev.packet_index
        if self.kafka is None:
            self._hold(ev, len(ev.data))
            head = self.first_bytes.setdefault(ev.direction, bytearray())
            if len(head) < BACKLOG_LIMIT:
                if head:
                    self.chunk_ends.setdefault(ev.direction, set()).add(len(head))
                head += ev.data[: BACKLOG_LIMIT - len(head)]
            return self._decide()
        if self.kafka and not self.tls:
            return self._route(
                self.framers[ev.direction].feed(ev.offset, ev.data, ev.timestamp_ns, ev.packet_index),
                ev.direction,
                ev.packet_index,
            )
        if self.tls:  # the TLS row's sizes (a Kafka connection's rows size their own frames)
            self.bytes_seen[ev.direction] = self.bytes_seen.get(ev.direction, 0) + len(ev.data)
        return []

    def gap(self, ev: StreamGap) -> list[Exchange]:
        if self.kafka is None:
            self._hold(ev, 0)
            self._leave_hole(ev)
            return self._decide()
        if self.kafka and not self.tls:
            return self._route(
                self.framers[ev.direction].gap(ev.offset, ev.length, ev.reason, ev.timestamp_ns),
                ev.direction,
                self.ctx.position,
            )
        return []

    def conflict(self, ev: StreamConflict) -> list[Exchange]:
        """A retransmitted copy differed from bytes read: said in the note of the row holding them."""
        if self.kafka is None:
            self._hold(ev, 0)
        elif self.kafka and not self.tls:
            handed_over = ev.offset + ev.length <= self.framers[ev.direction].handed_to()
            self._paired().conflict(
                ev.offset, ev.length, self.ctx.locate(ev.packet_index)[1], ev.direction == self.client, handed_over
            )
        return []

    def close(self, how: str = "end_of_capture") -> list[Exchange]:
        """The connection ended: ``how`` is the tcp stage's close detail (fin, reset, reused, ...)."""
        out = self._decide(final=True) if self.kafka is None else []
        if not self.kafka:
            return out
        if self.tls:
            return [*out, self._tls_row()]
        at = self.ctx.position  # (None at the end of the input: what is open stays open)
        for direction, framer in self.framers.items():
            out += self._route(framer.finish(_CUT_BY.get(how, _CUT_BY["end_of_capture"])), direction, at)
        return out + self._paired().finish(_LEFT_BY.get(how, _LEFT_BY["end_of_capture"]), at)

    # -- deciding ---------------------------------------------------------------------

    def _hold(self, ev, size: int) -> None:
        self.backlog.append(ev)
        self.backlog_bytes += size

    def _leave_hole(self, ev: StreamGap) -> None:
        """Keep the bytes after a gap at their place in the stream, so that frame sizes read before
        it still lead to the frames after it: a snaplen cuts most frames of a connection, and their
        sizes are all that says where the next begin. ``_HOLE`` stands for the missing bytes: text
        to a client id the cut ran into, and a size no frame has (so no frame starts in a hole).
        After a gap longer than ``BIG_HOLE`` the side is looked at afresh, as from a late start:
        no frame size that small spans it, and its bytes would fill what is held."""
        d = ev.direction
        head = self.first_bytes.setdefault(d, bytearray())
        if ev.length > BIG_HOLE:
            self.first_bytes[d], self.holes[d], self.hole_ends[d] = bytearray(), [], []
            self.chunk_ends.pop(d, None)
            self.scan_resume.pop(d, None)
            return
        length = min(ev.length, BACKLOG_LIMIT - len(head))
        if length <= 0:
            return
        if head and ev.reason != "snaplen_cut":  # the packet before a lost one ended here
            self.chunk_ends.setdefault(d, set()).add(len(head))
        self.holes.setdefault(d, []).append((len(head), len(head) + length))
        self.hole_ends.setdefault(d, []).append(len(head) + length)
        head += _HOLE * length

    def _decide(self, final: bool = False) -> list[Exchange]:
        # (holes count: a snaplen-cut side fills what is held with them, and is decided then)
        final = final or self.backlog_bytes > BACKLOG_LIMIT or any(map(_full, self.first_bytes.values()))
        if self.client is None:
            self.client = self._client_by_ports()
        if self.port_matched:
            head = self._captured(self._decided_client(), 5)
            if not head and not final:
                return []  # TLS or not is told by the client's first bytes
            self.kafka = True
            self.tls = looks_like_tls(head)
        elif not self.ctx.detect:
            self.kafka = False
        else:
            client = self._client_by_content(final)
            if client is None and not final:
                return []
            self.client = client
            self.kafka = client is not None
        if self.kafka and not self.tls:
            self._start()
        backlog, self.backlog, self.first_bytes, self.chunk_ends = self.backlog, [], {}, {}
        self.holes, self.hole_ends = {}, {}
        out: list[Exchange] = []
        if self.kafka:
            for ev in backlog:
                if isinstance(ev, StreamChunk):
                    out += self.chunk(ev)
                elif isinstance(ev, StreamGap):
                    out += self.gap(ev)
                else:
                    self.conflict(ev)
        return out

    def _client_by_ports(self) -> Direction | None:
        ports = self.ctx.ports
        k = self.key
        a_is_broker, b_is_broker = k.a_port in ports, k.b_port in ports
        if a_is_broker == b_is_broker:
            return None
        self.port_matched = True
        if b_is_broker:
            return Direction(k.a_ip, k.a_port, k.b_ip, k.b_port)
        return Direction(k.b_ip, k.b_port, k.a_ip, k.a_port)

    def _client_by_content(self, final: bool) -> Direction | None:
        """The side whose bytes hold a confirmed request start (only the SYN's sender, if seen).

        A broker's responses can chain like requests (a response header v0 read as a request
        header is api key 0, version = correlation id), so when both sides do, the side whose
        request correlation ids the other side answers wins; then the side whose ids differ.
        """
        ctx = self.ctx
        # which side is the client: only a request that reads exactly is evidence (a response's
        # header and body can read as a request's, with bytes left over)
        exact = request_start_check(
            ctx.known, ctx.max_frame_size, body_reads=partial(ctx.decoder.request_reads, exactly=True)
        )
        headers_only = request_start_check(ctx.known, ctx.max_frame_size)
        starts = {}
        for direction, head in self.first_bytes.items():
            check = self._around_holes(direction, exact, headers_only)
            if self.initiator is not None and direction != self.initiator:
                continue
            if looks_like_tls(self._captured(direction, 5)) and self.scan_resume.get(direction, 0) == 0:
                continue  # encrypted and on an unknown port: nothing says it is Kafka
            found, resume = first_confirmed(
                check,
                head,
                self.scan_resume.get(direction, 0),
                final,
                self._boundary_in(direction),
                partial(self._past_hole, direction) if self.holes.get(direction) else None,
            )
            self.scan_resume[direction] = resume
            if found is not None:
                starts[direction] = found
        if not starts:
            return self._client_by_responses() if final else None
        best = self.initiator or max(starts, key=lambda d: self._request_evidence(d, starts[d]))
        if self._runs_into_hole(best, starts[best]):
            return best if self._answered_through_holes(best, starts[best]) else None
        if self.initiator is not None:
            return self.initiator  # the only side looked at: its request start decides, no evidence needed
        answered, distinct, frames = self._request_evidence(best, starts[best])
        if answered:
            return best
        if not final:
            return None  # until the other side answers one of its ids, either side may be asking
        if frames > 2 and distinct == 1:
            return None  # one id over and over: a broker's responses (ids read from their bodies)
        return best

    def _answered_through_holes(self, direction: Direction, start: int) -> bool:
        """For a request start whose body the capture cut (it cannot say it reads): whether the
        requests from there are a Kafka client's and the other side answers them, two of their
        ids, or the one of a request with a client id. Other protocols' first frames read as a
        header with an empty client id and a correlation id of 0 more often than not (ZooKeeper's
        ConnectRequest and its answer do)."""
        requests = chained_requests(self.first_bytes[direction], start)
        if not kafka_like(requests):
            return False
        answered = self._request_evidence(direction, start)[0]
        if answered >= 2:
            return True
        check = partial(read_request_header, known=self.ctx.known, strict=True, max_frame_size=self.ctx.max_frame_size)
        head = check(self.first_bytes[direction], start)
        return answered == 1 and bool(head) and bool(head.client_id) and head.client_id.strip(_HOLE.decode()) != ""

    def _captured(self, direction: Direction, limit: int = BACKLOG_LIMIT) -> bytes:
        """The first ``limit`` bytes of one side that the capture has, the holes left out (b""
        when a gap said it sent some, but none were captured)."""
        head = self.first_bytes.get(direction, b"")
        holes = self.holes.get(direction)
        if not holes:
            return bytes(head[:limit])
        at, kept = 0, bytearray()
        for start, stop in [*holes, (len(head), len(head))]:
            kept += head[at : min(start, at + limit - len(kept))]
            if len(kept) >= limit:
                break
            at = stop
        return bytes(kept)

    def _around_holes(self, direction: Direction, exact: StartCheck, headers_only: StartCheck) -> StartCheck:
        """``exact``, but ``headers_only`` for a frame with bytes in a hole: what stands for them
        does not read as its body, and its header and the frames chaining from it are what can be
        checked. No frame starts in a hole."""
        holes = self.holes.get(direction)
        if not holes:
            return exact

        def check(buf, pos: int, final: bool, boundary) -> int:
            if self._runs_into_hole(direction, pos):
                return headers_only(buf, pos, final, boundary)
            return exact(buf, pos, final, boundary)

        return check

    def _next_hole(self, direction: Direction, pos: int) -> tuple[int, int] | None:
        """The first hole that ends after ``pos``."""
        holes = self.holes.get(direction)
        if not holes:
            return None
        i = bisect_right(self.hole_ends[direction], pos)
        return holes[i] if i < len(holes) else None

    def _past_hole(self, direction: Direction, pos: int) -> int:
        """``pos``, or the end of the hole it is in."""
        hole = self._next_hole(direction, pos)
        return hole[1] if hole is not None and hole[0] <= pos else pos

    def _runs_into_hole(self, direction: Direction, pos: int) -> bool:
        """Whether the frame whose size is at ``pos`` has bytes in a hole."""
        head = self.first_bytes[direction]
        if len(head) - pos < 4:
            return False
        hole = self._next_hole(direction, pos)
        return hole is not None and hole[0] < pos + 4 + _SIZE.unpack_from(head, pos)[0]

    def _client_by_responses(self) -> Direction | None:
        """With one side's bytes only and no request in them: Kafka if they are a run of responses
        (frames chaining to a packet boundary, ids counting up), whose receiver is the client."""
        sides = [(direction, head) for direction, head in self.first_bytes.items() if self._captured(direction, 1)]
        if len(sides) != 1 or sides[0][0] == self.initiator:
            return None  # both sides spoke (and nothing asked), or the side that connected only answers
        direction, head = sides[0]
        boundary = self._boundary_in(direction)
        responses = response_start_check(self.ctx.max_frame_size, lambda: ())
        for start in sorted({0} | self.chunk_ends.get(direction, set()))[:64]:
            if start < len(head) and responses(head, start, True, boundary) == CONFIRMED:
                ids = chained_ids(head, start, lambda p: response_ids_at(head, p))
                enough = MIN_RESPONSE_RUN - (self.initiator is not None)  # a SYN says which side serves
                if len(ids) >= enough and all(0 < b - a <= 64 for a, b in itertools.pairwise(ids)):
                    return reverse(direction)
        return None

    def _request_evidence(self, direction: Direction, start: int) -> tuple[int, int, int]:
        """(ids the other side answers, distinct ids, frames) of the requests chained from ``start``;
        computed again only when either side has new bytes."""
        other = self.first_bytes.get(reverse(direction), bytearray())
        key = (start, len(self.first_bytes[direction]), len(other))
        known = self.evidence.get(direction)
        if known is None or known[0] != key:
            known = self.evidence[direction] = (key, self._count_evidence(direction, start))
        return known[1]

    def _count_evidence(self, direction: Direction, start: int) -> tuple[int, int, int]:
        head = self.first_bytes[direction]
        ids = chained_ids(head, start, lambda p: request_ids_at(head, p))
        other = self.first_bytes.get(reverse(direction), bytearray())
        responses = response_start_check(self.ctx.max_frame_size, lambda: ids)
        boundary = self._boundary_in(reverse(direction))
        answered = set()  # ids of responses that start where the other side's packets start
        for start in sorted({0} | self.chunk_ends.get(reverse(direction), set())):
            if start < len(other) and responses(other, start, True, boundary) == CONFIRMED:
                answered.update(chained_ids(other, start, lambda p: response_ids_at(other, p)))
        return len(answered & set(ids)), len(set(ids)), len(ids)

    def _boundary_in(self, direction: Direction):
        head = self.first_bytes.get(direction, bytearray())
        ends = self.chunk_ends.get(direction, set())
        return lambda p: p == len(head) or p in ends

    def _start(self) -> None:
        client = self._decided_client()
        broker = reverse(client)
        ctx = self.ctx
        pairer = self.pairer = Pairer(
            ctx,
            self._connection_id(),
            address(client.src_ip, client.src_port),
            address(broker.src_ip, broker.src_port),
        )
        pairer.held.client_spoke = partial(self._spoke, client)
        max_size = ctx.max_frame_size
        in_sync = self.initiator is not None
        requests = request_start_check(ctx.known, max_size, pairer.client_ids, ctx.decoder.request_reads)
        self.framers[client] = DirectionFramer(requests, max_size, in_sync, request_cut_start(requests))
        self.framers[broker] = DirectionFramer(
            response_start_check(max_size, pairer.pending_ids),
            max_size,
            in_sync,
            response_cut_start(max_size, pairer.pending_ids),
            awaited_response(max_size, pairer.pending_ids),
        )

    def _spoke(self, direction: Direction) -> bool:
        """Whether any captured byte of one side has been fed to its framing."""
        framer = self.framers.get(direction)
        return framer is not None and framer.fed

    def _decided_client(self) -> Direction:
        assert self.client is not None, "the client side is decided before anything asks for it"
        return self.client

    def _paired(self) -> Pairer:
        assert self.pairer is not None, "a Kafka connection has its pairer from _start on"
        return self.pairer

    def connection_label(self) -> str:
        """The connection id rows carry; before the client side is known, the endpoints as captured."""
        if self.client is not None:
            return self._connection_id()
        k = self.key
        return f"{address(k.a_ip, k.a_port)}<->{address(k.b_ip, k.b_port)}#{k.instance}"

    def _connection_id(self) -> str:
        c = self._decided_client()
        return f"{address(c.src_ip, c.src_port)}->{address(c.dst_ip, c.dst_port)}#{self.key.instance}"

    # -- output -----------------------------------------------------------------------

    def _route(self, items: list, direction: Direction, at: int | None) -> list[Exchange]:
        return self._paired().take(items, direction == self.client, at) if items else []

    def _tls_row(self) -> Exchange:
        client = self._decided_client()
        broker = reverse(client)
        return Exchange(
            capture_file=self.ctx.locate(self.first_packet)[0],
            completed_at=self.ctx.position,
            connection_id=self._connection_id(),
            client_address=address(client.src_ip, client.src_port),
            broker_address=address(broker.src_ip, broker.src_port),
            request_time=self.ctx.time(self.first_ns),
            response_time=None,
            latency_ms=None,
            api_key=None,
            api_name=None,
            api_version=None,
            correlation_id=None,
            client_id=None,
            request_size=self.bytes_seen.get(client, 0),
            response_size=self.bytes_seen.get(broker, 0),
            request=None,
            response=None,
            status=TLS,
            error="TLS-encrypted connection: Kafka frames cannot be read without the session keys",
        )
