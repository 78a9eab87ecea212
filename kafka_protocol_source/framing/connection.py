"""One TCP connection seen as Kafka: which side is the client, is it Kafka at all, and framing.

Owns the decisions made before pairing: the client is the side talking to a configured broker
port, else the side that sent the SYN, else the side whose first bytes decode as a request.
A connection on a configured port is Kafka (or TLS); on any other port it is Kafka only if its
client's first frame decodes as a valid request, and otherwise it is left out. Until both are
decided, events wait in a bounded backlog. Frames then go to ``pairing.Pairer``.
"""

from __future__ import annotations

from ..codec.errors import DecodeError
from ..tcp import Direction, StreamChunk, StreamGap
from .model import TLS, Exchange
from .pairing import Pairer
from .sniff import looks_like_tls, request_start_check, response_start_check
from .splitter import DirectionFramer

BACKLOG_LIMIT = 1 << 20
# What to say of a frame cut short, and of a request left unanswered, by the way a connection ended.
_CUT_BY = {"end_of_capture": "the capture ended inside this frame", "reset": "the connection was reset (RST) inside this frame",
           "fin": "the connection was closed (FIN) inside this frame", "reused": "the connection was replaced inside this frame"}
_LEFT_BY = {"end_of_capture": "no response before the end of the capture",
            "reset": "no response before the connection was reset (RST)",
            "fin": "no response before the connection was closed (FIN)",
            "reused": "no response before the connection was replaced by a new one"}  # bytes held while deciding whether a flow on an unknown port is Kafka


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
        self.framers: dict[Direction, DirectionFramer] = {}
        self.pairer: Pairer | None = None
        self.first_ns: int | None = None

    # -- events from the tcp stage ----------------------------------------------------

    def chunk(self, ev: StreamChunk) -> None:
        if self.first_ns is None:
            self.first_ns = ev.timestamp_ns
        if self.kafka is None:
            self._hold(ev, len(ev.data))
            head = self.first_bytes.setdefault(ev.direction, bytearray())
            if len(head) < 1 << 16:
                head += ev.data[: (1 << 16) - len(head)]
            self._decide()
            return
        self.bytes_seen[ev.direction] = self.bytes_seen.get(ev.direction, 0) + len(ev.data)
        if self.kafka and not self.tls:
            self._route(self.framers[ev.direction].feed(ev.offset, ev.data, ev.timestamp_ns, ev.packet_index), ev.direction)

    def gap(self, ev: StreamGap) -> None:
        if self.kafka is None:
            self._hold(ev, 0)
            self.first_bytes.setdefault(ev.direction, bytearray())
            self._decide()
        elif self.kafka and not self.tls:
            self._route(self.framers[ev.direction].gap(ev.offset, ev.length, ev.reason), ev.direction)

    def close(self, how: str = "end_of_capture") -> None:
        """The connection ended: ``how`` is the tcp stage's close detail (fin, reset, reused, ...)."""
        if self.kafka is None:
            self._decide(final=True)
        if not self.kafka:
            return
        if self.tls:
            self._emit_tls()
            return
        for direction, framer in self.framers.items():
            self._route(framer.finish(_CUT_BY.get(how, _CUT_BY["end_of_capture"])), direction)
        self.pairer.finish(_LEFT_BY.get(how, _LEFT_BY["end_of_capture"]))

    # -- deciding ---------------------------------------------------------------------

    def _hold(self, ev, size: int) -> None:
        self.backlog.append(ev)
        self.backlog_bytes += size

    def _decide(self, final: bool = False) -> None:
        if self.client is None:
            self.client = self._client_by_ports() or self.initiator or self._client_by_content()
        if self.client is None:
            if final or self.backlog_bytes > BACKLOG_LIMIT:
                self.kafka = False
            return
        head = bytes(self.first_bytes.get(self.client, b""))
        if self.port_matched:
            self.kafka = True
            self.tls = looks_like_tls(head)
        elif not self.ctx.detect:
            self.kafka = False
        elif looks_like_tls(head):
            self.kafka = False  # encrypted and on an unknown port: nothing says it is Kafka
        else:
            verdict = self._first_frame_is_request(head)
            if verdict is None and (final or self.backlog_bytes > BACKLOG_LIMIT):
                verdict = False
            if verdict is None:
                return
            self.kafka = verdict
        if self.kafka and not self.tls:
            self._start()
        backlog, self.backlog, self.first_bytes = self.backlog, [], {}
        if self.kafka:
            for ev in backlog:
                (self.chunk if isinstance(ev, StreamChunk) else self.gap)(ev)

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

    def _client_by_content(self) -> Direction | None:
        if not self.ctx.detect:
            return None
        for direction, head in self.first_bytes.items():
            if self._first_frame_is_request(bytes(head)):
                return direction
        return None

    def _first_frame_is_request(self, head: bytes) -> bool | None:
        if len(head) < 4:
            return None
        size = int.from_bytes(head[:4], "big", signed=True)
        if not 8 <= size <= self.ctx.max_frame_size:
            return False
        if len(head) < 4 + size:
            return None if size < 1 << 16 else False
        try:
            self.ctx.decoder.decode_request(head[4:4 + size])
        except DecodeError:
            return False
        return True

    def _start(self) -> None:
        broker = reverse(self.client)
        self.pairer = Pairer(self.ctx, self._connection_id(), address(self.client.src_ip, self.client.src_port),
                             address(broker.src_ip, broker.src_port))
        max_size = self.ctx.max_frame_size
        in_sync = self.initiator is not None
        self.framers[self.client] = DirectionFramer(request_start_check(self.ctx.decoder, max_size),
                                                    max_size, in_sync)
        self.framers[broker] = DirectionFramer(response_start_check(max_size, self.pairer.pending_ids),
                                               max_size, in_sync)

    def _connection_id(self) -> str:
        c = self.client
        return f"{address(c.src_ip, c.src_port)}->{address(c.dst_ip, c.dst_port)}#{self.key.instance}"

    # -- output -----------------------------------------------------------------------

    def _route(self, items: list, direction: Direction) -> None:
        if items:
            self.pairer.take(items, direction == self.client)

    def _emit_tls(self) -> None:
        broker = reverse(self.client)
        self.ctx.out.append(Exchange(
            capture_file=self.ctx.capture_file, connection_id=self._connection_id(),
            client_address=address(self.client.src_ip, self.client.src_port),
            broker_address=address(broker.src_ip, broker.src_port),
            request_time=self.ctx.time(self.first_ns), response_time=None, latency_ms=None,
            api_key=None, api_name=None, api_version=None, correlation_id=None, client_id=None,
            request_size=self.bytes_seen.get(self.client, 0), response_size=self.bytes_seen.get(broker, 0),
            request=None, response=None, status=TLS,
            error="TLS-encrypted connection: Kafka frames cannot be read without the session keys"))
