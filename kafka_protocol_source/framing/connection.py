"""One TCP connection seen as Kafka: which side is the client, is it Kafka at all, and framing.

Owns the decisions made before pairing. The client is the side talking to a configured broker
port, else the side that sent the SYN, else the side whose bytes hold a confirmed request start
anywhere (a capture usually joins connections mid-stream, often mid-frame). A connection on a
configured port is Kafka (or TLS); on any other port it is Kafka only if the client's bytes hold
a confirmed request start (``sniff``: a header of a known api and version, confirmed by what
follows it), and otherwise it is left out. Until both are decided, events wait in a bounded
backlog. Frames then go to ``pairing.Pairer``.

Bytes a gap left out (a small snaplen cuts nearly every frame) keep their place while deciding
(``held_side``), so frame sizes still lead from packet to packet; a request start whose frame runs
into such a hole counts only if the requests from it are a Kafka client's and the other side
answers them (``_answered_through_holes``).
"""

from __future__ import annotations

from functools import partial

from ..tcp import Direction, StreamChunk, StreamConflict, StreamGap
from .evidence import holds_responses, request_evidence
from .held_side import BACKLOG_LIMIT, HOLE, HeldSide
from .model import BROKER_NEVER_SEEN, LEFT_AT_END, TLS, Exchange
from .pairing import Pairer
from .sniff import (
    StartCheck,
    awaited_response,
    chained_requests,
    first_confirmed,
    kafka_like,
    looks_like_tls,
    read_request_header,
    request_cut_start,
    request_start_check,
    response_cut_start,
    response_start_check,
)
from .splitter import DirectionFramer

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


def _around_holes(side: HeldSide, exact: StartCheck, headers_only: StartCheck) -> StartCheck:
    """``exact``, but ``headers_only`` for a frame with bytes in a hole: what stands for them does
    not read as its body, and its header and the frames chaining from it are what can be checked."""
    if not side.holes:
        return exact

    def check(buf, pos: int, final: bool, boundary) -> int:
        if side.runs_into_hole(pos):
            return headers_only(buf, pos, final, boundary)
        return exact(buf, pos, final, boundary)

    return check


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
        self.held: dict[Direction, HeldSide] = {}  # each side's first bytes, while deciding
        self.scan_resume: dict[Direction, int] = {}
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
            self.held.setdefault(ev.direction, HeldSide()).add(ev.data)
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
        why = _LEFT_BY.get(how, _LEFT_BY["end_of_capture"])
        if not self._spoke(reverse(self._decided_client())):
            why += BROKER_NEVER_SEEN
        return out + self._paired().finish(why, at)

    # -- deciding ---------------------------------------------------------------------

    def _hold(self, ev, size: int) -> None:
        self.backlog.append(ev)
        self.backlog_bytes += size

    def _leave_hole(self, ev: StreamGap) -> None:
        """The gap's place in the side's held bytes; after a long one, the side is looked at afresh."""
        if not self.held.setdefault(ev.direction, HeldSide()).leave_hole(ev.length, ev.reason):
            self.held[ev.direction] = HeldSide()
            self.scan_resume.pop(ev.direction, None)

    def _held(self, direction: Direction) -> HeldSide:
        return self.held.get(direction) or HeldSide()

    def _decide(self, final: bool = False) -> list[Exchange]:
        # (holes count: a snaplen-cut side fills what is held with them, and is decided then)
        final = final or self.backlog_bytes > BACKLOG_LIMIT or any(side.full for side in self.held.values())
        if self.client is None:
            self.client = self._client_by_ports()
        if self.port_matched:
            head = self._held(self._decided_client()).captured(5)
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
            self.client = client or self._client_of_broker_found()
            self.kafka = self.client is not None
        if self.kafka:
            broker = reverse(self._decided_client())
            self.ctx.brokers_found.add((broker.src_ip, broker.src_port))
        if self.kafka and not self.tls:
            self._start()
        backlog, self.backlog, self.held = self.backlog, [], {}
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
        k = self.key
        client = self._client_facing(k.a_port in self.ctx.ports, k.b_port in self.ctx.ports)
        self.port_matched = client is not None
        return client

    def _client_of_broker_found(self) -> Direction | None:
        """The side talking to an endpoint other connections were found serving Kafka on (for a
        side whose bytes alone do not show it: one answer, a capture joined after the last request)."""
        k, found = self.key, self.ctx.brokers_found
        return self._client_facing((k.a_ip, k.a_port) in found, (k.b_ip, k.b_port) in found)

    def _client_facing(self, a_is_broker: bool, b_is_broker: bool) -> Direction | None:
        """The side facing the broker, when exactly one side is it."""
        if a_is_broker == b_is_broker:
            return None
        k = self.key
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
        for direction, side in self.held.items():
            if self.initiator is not None and direction != self.initiator:
                continue
            if looks_like_tls(side.captured(5)) and self.scan_resume.get(direction, 0) == 0:
                continue  # encrypted and on an unknown port: nothing says it is Kafka
            found, resume = first_confirmed(
                _around_holes(side, exact, headers_only),
                side.data,
                self.scan_resume.get(direction, 0),
                final,
                side.boundary,
                side.past_hole if side.holes else None,
            )
            self.scan_resume[direction] = resume
            if found is not None:
                starts[direction] = found
        if not starts:
            return self._client_by_responses() if final else None
        best = self.initiator or max(starts, key=lambda d: self._request_evidence(d, starts[d]))
        if self.held[best].runs_into_hole(starts[best]):
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
        data = self.held[direction].data
        requests = chained_requests(data, start)
        if not kafka_like(requests):
            return False
        answered = self._request_evidence(direction, start)[0]
        if answered >= 2:
            return True
        head = read_request_header(data, start, self.ctx.known, strict=True, max_frame_size=self.ctx.max_frame_size)
        return answered == 1 and bool(head) and bool(head.client_id) and head.client_id.strip(HOLE.decode()) != ""

    def _client_by_responses(self) -> Direction | None:
        """With one side's bytes only and no request in them: Kafka if they are a run of responses
        (frames chaining to a packet boundary, ids counting up), whose receiver is the client."""
        sides = [(direction, side) for direction, side in self.held.items() if side.captured(1)]
        if len(sides) != 1 or sides[0][0] == self.initiator:
            return None  # both sides spoke (and nothing asked), or the side that connected only answers
        direction, side = sides[0]
        serves = self.initiator is not None  # a SYN says which side serves
        return reverse(direction) if holds_responses(side, self.ctx.max_frame_size, serves) else None

    def _request_evidence(self, direction: Direction, start: int) -> tuple[int, int, int]:
        """(ids the other side answers, distinct ids, frames) of the requests chained from ``start``
        (``evidence.request_evidence``); computed again only when either side has new bytes."""
        side, peer = self.held[direction], self._held(reverse(direction))
        key = (start, len(side.data), len(peer.data))
        known = self.evidence.get(direction)
        if known is None or known[0] != key:
            known = self.evidence[direction] = (key, request_evidence(side, peer, start, self.ctx.max_frame_size))
        return known[1]

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
