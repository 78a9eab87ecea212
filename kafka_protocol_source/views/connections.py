"""The connections view: one row per TCP connection, its TCP facts beside its Kafka facts.

TCP facts (packets, payload bytes, retransmissions, those that differed from the bytes read
and those that were a copy, reordering, gaps, handshake RTT, how it ended) come from
``tcp.stats`` over the capture's segments; Kafka facts (client ids, exchanges, what went wrong)
from the exchanges read on the same connection. Both number connections as
``reassemble`` does, so they join on the endpoints and the instance number that ends a
``connection_id`` (``client->broker#instance``). A connection with no exchanges is not Kafka
(``kafka`` false); its client is the side that sent the SYN, else the side not on a broker port.
A stream dump has no packets: its rows carry the Kafka facts only.

Owns the join and the row shape (``CONNECTION_COLUMNS``); not the reading of either side.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..capture import TcpSegment
from ..capture.session import session_packets
from ..framing import Exchange
from ..framing.connection import address
from ..framing.context import DEFAULT_PORTS, FILE_SHIFT, CaptureContext
from ..framing.model import OK
from ..pipeline import read_capture
from ..spec.registry import registry_for
from ..tcp import DEFAULT_MAX_BUFFERED_BYTES
from ..tcp.stats import ConnectionStats, connection_stats
from .outcomes import ResponseErrorCodes, error_names, exchange_error_codes, response_error_codes

CONNECTION_COLUMNS = (
    "capture_file",
    "connection_id",
    "client_address",
    "broker_address",
    "kafka",
    "first_packet_time",
    "last_packet_time",
    "duration_ms",
    "client_packets",
    "broker_packets",
    "client_bytes",
    "broker_bytes",
    "client_retransmissions",
    "broker_retransmissions",
    "client_conflicting_retransmissions",
    "broker_conflicting_retransmissions",
    "client_copies",
    "broker_copies",
    "client_out_of_order",
    "broker_out_of_order",
    "client_gaps",
    "broker_gaps",
    "client_bytes_missing",
    "broker_bytes_missing",
    "handshake_rtt_ms",
    "ended",
    "ended_by",
    "client_ids",
    "api_names",
    "exchanges",
    "exchanges_not_ok",
    "error_responses",
    "error_codes",
    "error_names",
)
_PER_SIDE = (
    ("packets", "packets"),
    ("bytes", "payload_bytes"),
    ("retransmissions", "retransmissions"),
    ("conflicting_retransmissions", "conflicting_retransmissions"),
    ("copies", "copies"),
    ("out_of_order", "out_of_order"),
    ("gaps", "gaps"),
    ("bytes_missing", "bytes_missing"),
)


def read_connections(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    ports: Iterable[int] | None = DEFAULT_PORTS,
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
    **read_options,
) -> Iterator[dict]:
    """The connections view of a capture (or of the files of one rotated capture, in order).

    ``read_options`` go to ``read_capture`` (``detect_kafka``, ``specs``, ...)."""
    paths = _paths(path)
    exchanges = read_capture(paths, ports=ports, max_buffered_bytes=max_buffered_bytes, **read_options)
    codes = response_error_codes(registry_for(read_options.get("specs")))
    return connection_rows(exchanges, paths, ports=ports, max_buffered_bytes=max_buffered_bytes, response_codes=codes)


def connection_rows(
    exchanges: Iterable[Exchange],
    paths: Sequence[str],
    *,
    ports: Iterable[int] | None = DEFAULT_PORTS,
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
    response_codes: ResponseErrorCodes | None = None,
) -> Iterator[dict]:
    """Rows (dicts keyed by ``CONNECTION_COLUMNS``) joining ``exchanges`` with the TCP facts of
    ``paths``. ``response_codes``: finds error codes through the spec (the same codes, faster)."""
    paths = _paths(paths)
    builder = ConnectionsBuilder(ports, response_codes)
    for ex in exchanges:
        builder.add_exchange(ex)
    for stats in connection_stats(session_segments(paths), max_buffered_bytes=max_buffered_bytes):
        builder.add_stats(stats, paths[stats.first_packet >> FILE_SHIFT])
    return builder.rows()


def _paths(path) -> list[str]:
    return [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]


def session_segments(paths: Sequence[str]) -> Iterator[TcpSegment]:
    """The TCP segments of every file in capture-time order, packet indices global as
    ``read_capture`` makes them (``session_packets``). A file that is not a capture (a stream
    dump) has none."""
    for item in session_packets(paths):
        if item.__class__ is TcpSegment:
            yield item


@dataclass
class _Kafka:
    """What the exchanges of one connection say."""

    capture_file: str
    connection_id: str
    client: str | None
    broker: str | None
    client_ids: set = field(default_factory=set)
    api_names: set = field(default_factory=set)
    exchanges: int = 0
    not_ok: int = 0
    error_responses: int = 0
    codes: set = field(default_factory=set)
    first: datetime | None = None
    last: datetime | None = None


def _endpoints(connection_id: str) -> tuple[frozenset, int, str | None, str | None]:
    """(both endpoints, instance, client, broker) of ``client->broker#n``; ``a<->b#n`` (sides not
    yet known) gives no client; a stream dump's id has no instance (``client->broker``, or a name)."""
    label, sep, instance = connection_id.rpartition("#")
    if not sep or not instance.isdigit():
        label, instance = connection_id, "0"
    if "<->" in label:
        a, _, b = label.partition("<->")
        return frozenset((a, b)), int(instance), None, None
    if "->" in label:
        a, _, b = label.partition("->")
        return frozenset((a, b)), int(instance), a, b
    return frozenset((label,)), int(instance), None, None


class ConnectionsBuilder:
    def __init__(self, ports: Iterable[int] | None = DEFAULT_PORTS, response_codes: ResponseErrorCodes | None = None):
        self.ports = frozenset(ports or ())
        self.response_codes = response_codes
        self.kafka: dict[tuple, _Kafka] = {}
        self.tcp: dict[tuple, tuple[ConnectionStats, str]] = {}
        self.brokers: set[str] = set()  # where the exchanges found brokers (rows() gathers them)

    def add_exchange(self, ex: Exchange) -> None:
        if not ex.connection_id:
            return  # a problem with the file itself, on no connection
        pair, instance, client, broker = _endpoints(ex.connection_id)
        k = self.kafka.get((pair, instance))
        if k is None:
            k = self.kafka[(pair, instance)] = _Kafka(ex.capture_file, ex.connection_id, client, broker)
        elif k.client is None and client is not None:
            k.client, k.broker, k.connection_id = client, broker, ex.connection_id
        k.exchanges += 1
        if ex.client_id:
            k.client_ids.add(ex.client_id)
        if ex.api_name:
            k.api_names.add(ex.api_name)
        if ex.status != OK:
            k.not_ok += 1
        codes = exchange_error_codes(ex, self.response_codes)
        if codes:
            k.error_responses += 1
            k.codes.update(codes)
        for t in (ex.request_time, ex.response_time):
            if t is not None:
                k.first = t if k.first is None or t < k.first else k.first
                k.last = t if k.last is None or t > k.last else k.last

    def add_stats(self, stats: ConnectionStats, capture_file: str) -> None:
        key = stats.key
        pair = frozenset((address(key.a_ip, key.a_port), address(key.b_ip, key.b_port)))
        self.tcp[(pair, key.instance)] = (stats, capture_file)

    def rows(self) -> Iterator[dict]:
        self.brokers = {kafka.broker for kafka in self.kafka.values() if kafka.broker}
        for join_key in sorted(self.tcp.keys() | self.kafka.keys(), key=self._order):
            yield self._row(self.tcp.get(join_key), self.kafka.get(join_key))

    def _order(self, join_key):
        tcp, kafka = self.tcp.get(join_key), self.kafka.get(join_key)
        if tcp is not None:
            return 0, tcp[0].first_packet, ""
        assert kafka is not None, "a join key comes from a TCP connection or from exchanges"
        return 1, 0, kafka.connection_id

    def _client_of(self, stats: ConnectionStats) -> str:
        """The client side of a connection no exchange oriented: the SYN's sender, else the side
        not on a broker port, else the side not at an address other connections' exchanges found
        a broker at (a capture joined late sees some connections without a byte of payload), else
        the first endpoint."""
        k = stats.key
        if stats.initiator is not None:
            return address(stats.initiator.src_ip, stats.initiator.src_port)
        a, b = address(k.a_ip, k.a_port), address(k.b_ip, k.b_port)
        if k.a_port in self.ports and k.b_port not in self.ports:
            return b
        if a in self.brokers and b not in self.brokers:
            return b
        return a

    def _row(self, tcp: tuple[ConnectionStats, str] | None, kafka: _Kafka | None) -> dict:
        row = dict.fromkeys(CONNECTION_COLUMNS)
        stats, capture_file = tcp if tcp is not None else (None, None)
        client = kafka.client if kafka is not None and kafka.client else None
        broker: str | None
        if stats is not None:
            client = client or self._client_of(stats)
            k = stats.key
            a, b = address(k.a_ip, k.a_port), address(k.b_ip, k.b_port)
            broker = b if client == a else a
            connection_id = f"{client}->{broker}#{k.instance}"
            self._tcp_columns(row, stats, client)
        else:
            assert kafka is not None, "a join key comes from a TCP connection or from exchanges"
            broker = kafka.broker
            connection_id = kafka.connection_id
            row.update(first_packet_time=kafka.first, last_packet_time=kafka.last)
        if capture_file is None and kafka is not None:
            capture_file = kafka.capture_file
        row.update(
            capture_file=capture_file,
            connection_id=connection_id,
            client_address=client,
            broker_address=broker,
            kafka=kafka is not None,
        )
        if kafka is not None:
            codes = sorted(kafka.codes)
            row.update(
                client_ids=sorted(kafka.client_ids),
                api_names=sorted(kafka.api_names),
                exchanges=kafka.exchanges,
                exchanges_not_ok=kafka.not_ok,
                error_responses=kafka.error_responses,
                error_codes=codes,
                error_names=error_names(codes),
            )
        else:
            row.update(
                client_ids=[],
                api_names=[],
                exchanges=0,
                exchanges_not_ok=0,
                error_responses=0,
                error_codes=[],
                error_names=[],
            )
        return row

    @staticmethod
    def _tcp_columns(row: dict, stats: ConnectionStats, client: str) -> None:
        k = stats.key
        client_is_a = address(k.a_ip, k.a_port) == client
        sides = {
            "client": stats.a_to_b if client_is_a else stats.b_to_a,
            "broker": stats.b_to_a if client_is_a else stats.a_to_b,
        }
        for side, s in sides.items():
            for column, attr in _PER_SIDE:
                row[f"{side}_{column}"] = getattr(s, attr)
        rtt = stats.handshake_rtt_ns
        closer = stats.closed_by
        ended_by = None
        if closer is not None:
            ended_by = "client" if address(closer.src_ip, closer.src_port) == client else "broker"
        row.update(
            first_packet_time=CaptureContext.time(stats.first_ns),
            last_packet_time=CaptureContext.time(stats.last_ns),
            duration_ms=(stats.last_ns - stats.first_ns) / 1e6,
            handshake_rtt_ms=rtt / 1e6 if rtt is not None else None,
            ended=stats.ended,
            ended_by=ended_by,
        )
