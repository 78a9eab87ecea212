"""``read_capture``: one capture (a file, or the files of one rotated session) in, exchanges out.

The one module above the stages: it wires capture readers -> TCP reassembly -> connections ->
pairing, hands framing a body decoder (the codec's, adapted by ``body_decoder``), and
streams: exchanges are yielded as they complete, and nothing holds a whole file. Problems with
the file itself (a truncated last record, an unsupported link type) become exchanges with
status ``capture_error`` so they are seen, not lost. No exception escapes for a file that could
be opened: a failure of ours inside one connection becomes an ``internal_error`` row for that
connection and the rest is still read.

Options come as one frozen ``CaptureOptions``; which connections to read (and for which apis)
is a ``ConnectionScope`` the caller builds (the Spark layer shares a capture between tasks
that way), so this module knows nothing of partitions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial

from .body_decoder import CodecBodies
from .capture import CaptureError, CaptureIssue, TcpSegment, packet_number
from .capture.model import KnownOtherFormat
from .capture.runs import RecordRuns
from .capture.session import session_packets
from .capture.source import detect_format
from .codec.decoder import decoder_for
from .framing.connection import Connection
from .framing.context import DEFAULT_PORTS, CaptureContext
from .framing.dumps import cut_dump_hint, is_dump, read_dump
from .framing.model import CAPTURE_ERROR, INTERNAL_ERROR, Exchange
from .framing.sniff import KnownApis
from .framing.splitter import DEFAULT_MAX_FRAME_SIZE
from .records import DEFAULT_MAX_DECOMPRESSED_BYTES
from .spec.headers import request_header_version
from .tcp import DEFAULT_MAX_BUFFERED_BYTES, ConnectionKey, FlowEvent, StreamChunk, StreamGap, reassemble

# Packets whose headers the snaplen cut, so that their connection is not known: what they carried
# is a gap of its stream where other packets show that, and one row at the end says how many.
_HEADERS_CUT = "snaplen_cut"
_FILE_ENDS = frozenset({"truncated_file", "corrupt_file"})  # where a file's reading stops, inside a packet or not

# Which connections one reader takes, by their endpoints in the tcp stage's canonical order
# (a_ip, a_port, b_ip, b_port): everything (None or True), nothing (False), or only these apis.
ConnectionScope = Callable[[tuple[str, int, str, int]], "frozenset[int] | bool | None"]


@dataclass(frozen=True)
class CaptureOptions:
    """How to read a capture. ``ports``: broker ports (the other side is the client; empty: find
    Kafka by content); ``detect_kafka``: also find Kafka on other ports, by a request start in a
    side's bytes; ``max_frame_size``: a larger claimed frame size is a framing error;
    ``max_buffered_bytes``: out-of-order bytes held per TCP direction before giving up on a
    hole; ``specs``: message definitions to decode bodies with (a directory or a krammar file;
    None: the bundled ones); ``apis`` and ``window_ns`` (request times, ns since the epoch,
    either end open) keep only matching exchanges, without decoding the others;
    ``packet_limits``: read at most this many packets of the files it names (a file still being
    written); ``issues_here``: report problems with the files themselves (one of several readers
    sharing a capture does); ``max_decompressed_bytes``: what the ``records`` fields of one frame
    may decompress to, together (a frame past it says so in its row); ``record_runs``: read only
    these records of the files it names (``capture.index`` gives each of the readers sharing a
    capture the records of its own connections)."""

    ports: frozenset[int] = DEFAULT_PORTS
    detect_kafka: bool = True
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES
    specs: str | None = None
    apis: frozenset[int] | None = None
    window_ns: tuple[int | None, int | None] | None = None
    packet_limits: Mapping[str, int] = field(default_factory=dict)
    issues_here: bool = True
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    record_runs: Mapping[str, RecordRuns] = field(default_factory=dict)
    unknown_api_kept: frozenset[str] = frozenset()  # see CaptureContext


def read_capture(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    ports: Iterable[int] | None = DEFAULT_PORTS,
    detect_kafka: bool = True,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
    specs: str | None = None,
    apis: Iterable[int] | None = None,
    window_ns: tuple[int | None, int | None] | None = None,
    packet_limits: Mapping[str, int] | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[Exchange]:
    """Yield every Kafka exchange in the capture at ``path`` (see ``CaptureOptions``).

    ``path`` may be a list of captures of one session (rotated files, in time order): they are
    read as one capture, so connections, frames and exchanges span files; each row's
    ``capture_file`` is the file where its exchange started.
    """
    options = CaptureOptions(
        frozenset(int(p) for p in ports or ()),
        detect_kafka,
        max_frame_size,
        max_buffered_bytes,
        specs,
        frozenset(apis) if apis is not None else None,
        window_ns,
        packet_limits or {},
        max_decompressed_bytes=max_decompressed_bytes,
    )
    return read_with(path, options)


_NOT_A_CAPTURE = "not a pcap, pcapng or Kafka stream dump: {}"


def unreadable(path: str, options: CaptureOptions) -> str | None:
    """Why ``read_with`` reads nothing of ``path`` but a ``capture_error`` row (None: it reads it,
    as a capture or a stream dump); from the file's first bytes."""
    try:
        detect_format(path)
    except CaptureError as not_a_capture:
        ctx = _context([path], options)
        return None if _is_dump(path, not_a_capture, ctx) else _not_a_capture(path, not_a_capture, ctx)
    return None


def _not_a_capture(path: str, not_a_capture: CaptureError, ctx: CaptureContext) -> str:
    said = _NOT_A_CAPTURE.format(not_a_capture)
    hint = None if isinstance(not_a_capture, KnownOtherFormat) else cut_dump_hint(path, ctx)
    return f"{said}; {hint}" if hint else said


def _is_dump(path: str, not_a_capture: CaptureError, ctx: CaptureContext) -> bool:
    """Whether a file that is no capture is a stream dump (a file of a known other kind is not)."""
    return not isinstance(not_a_capture, KnownOtherFormat) and is_dump(path, ctx)


def read_with(path, options: CaptureOptions, scope: ConnectionScope | None = None) -> Iterator[Exchange]:
    """``read_capture`` with its options as one value, and only the connections ``scope`` takes.
    Of several files, those that are not captures (a stream dump, a file that is gone or is
    something else) are read on their own; the captures, as one."""
    paths = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
    others = set()
    for p in paths:
        try:
            detect_format(p)
        except CaptureError as not_a_capture:
            others.add(p)
            if options.issues_here:
                ctx = _context([p], options)
                if _is_dump(p, not_a_capture, ctx):
                    yield from read_dump(p, ctx)
                else:
                    yield _capture_error(ctx, _not_a_capture(p, not_a_capture, ctx))
    captures = [p for p in paths if p not in others]
    if captures:  # (numbered as ``paths`` are: an emit rule or a caller may name them by number)
        ctx = replace(_context(paths, options), capture_file=captures[0])
        yield from _read_packets(paths, ctx, options, scope, frozenset(others))


def _context(paths: list[str], options: CaptureOptions) -> CaptureContext:
    known, names = _bundled_knowledge()
    return CaptureContext(
        paths[0],
        CodecBodies(
            decoder_for(options.specs), options.max_decompressed_bytes, decoder_for(None) if options.specs else None
        ),
        known,
        options.ports,
        options.detect_kafka,
        options.max_frame_size,
        options.apis,
        options.window_ns,
        bundled_names=names,
        files=tuple(paths),
        unknown_api_kept=options.unknown_api_kept,
    )


@lru_cache(maxsize=1)
def _bundled_knowledge() -> tuple[KnownApis, dict[int, str]]:
    """What finding Kafka relies on, from the bundled definitions whatever ``specs`` says (see ``sniff``)."""
    registry = decoder_for(None).registry
    names = {key: name for key in registry.api_keys() if (name := registry.api_name(key)) is not None}
    return KnownApis.from_registry(registry, request_header_version), names


def _within(segments, scope: ConnectionScope) -> Iterator:
    """Drop the segments of connections the scope does not take at all, before reassembly."""
    dropped: dict[tuple, bool] = {}  # endpoints as the packet has them -> whether the scope takes none
    for item in segments:
        if type(item) is TcpSegment:
            seen = item[1:5]  # src_ip, src_port, dst_ip, dst_port: one slice, not four lookups
            drop = dropped.get(seen)
            if drop is None:
                a, b = seen[:2], seen[2:]
                if len(dropped) >= 1 << 16:
                    dropped.clear()
                drop = dropped[seen] = scope(a + b if a <= b else b + a) is False
            if drop:
                continue
        yield item


def _session_packets(
    paths: list[str], contexts: dict, limits: Mapping[str, int], runs: Mapping[str, RecordRuns], skip: frozenset
) -> Iterator:
    """``session_packets``, keeping each context's ``position`` at the packet being read."""
    for item in session_packets(paths, limits, runs, skip):
        for c in contexts.values():
            c.position = item.packet_index
        yield item
    for c in contexts.values():
        c.position = None


def _read_packets(
    paths: list[str],
    ctx: CaptureContext,
    options: CaptureOptions,
    scope: ConnectionScope | None,
    skip: frozenset = frozenset(),
) -> Iterator[Exchange]:
    connections: dict[ConnectionKey, Connection] = {}
    contexts: dict[frozenset[int] | None, CaptureContext] = {None: ctx}
    open_connection = partial(_open_connection, ctx, scope, contexts)
    out: list[Exchange] = []
    skipped: set[ConnectionKey] = set()  # outside the scope, or stopped by a failure of ours
    headers_cut = _HeadersCut()
    segments = _session_packets(paths, contexts, options.packet_limits, options.record_runs, skip)
    if scope is not None:
        segments = _within(segments, scope)
    events = reassemble(segments, max_buffered_bytes=options.max_buffered_bytes)
    while True:
        try:
            ev = next(events, None)
        except Exception as e:  # noqa: BLE001 - a bug below us ends the file, not the job
            out.append(_internal_error(ctx, None, f"reading stopped: {type(e).__name__}: {e}"))
            ev = None
        if ev is None:
            break
        if isinstance(ev, CaptureIssue):
            # a problem of the file itself, whatever the api and time filters: the read is incomplete
            if ev.kind == _HEADERS_CUT:
                headers_cut.add(ev)
                continue
            if ev.kind in _FILE_ENDS:
                headers_cut.file_ended(ev)
            if options.issues_here:
                out.append(_issue_row(ctx, ev))
        elif not skipped or ev.conn not in skipped:  # (hashing a ConnectionKey is not free)
            try:
                out += _route(ev, type(ev), connections, open_connection, skipped)
            except Exception as e:  # noqa: BLE001 - one connection's failure is that connection's row
                skipped.add(ev.conn)
                out.append(_internal_error(ctx, connections.pop(ev.conn, None), f"{type(e).__name__}: {e}"))
        if out:
            yield from out
            out.clear()
    for conn in connections.values():
        try:
            out += conn.close()
        except Exception as e:  # noqa: BLE001
            out.append(_internal_error(ctx, conn, f"{type(e).__name__}: {e}"))
    if headers_cut.first is not None and options.issues_here:
        out.append(_headers_cut_row(ctx, headers_cut.first, headers_cut.count))
    yield from out


def _open_connection(
    ctx: CaptureContext,
    scope: ConnectionScope | None,
    contexts: dict[frozenset[int] | None, CaptureContext],
    key: ConnectionKey,
    initiator,
) -> Connection | None:
    """A connection the scope takes (``contexts`` caches one context per set of apis), else None."""
    taken = None if scope is None else scope((key.a_ip, key.a_port, key.b_ip, key.b_port))
    if taken is False:
        return None
    if taken is True or taken is None:
        return Connection(key, ctx, initiator)
    if taken not in contexts:  # read for some apis only
        contexts[taken] = replace(ctx, apis=taken & ctx.apis if ctx.apis is not None else taken)
    return Connection(key, contexts[taken], initiator)


def _issue_row(ctx: CaptureContext, issue: CaptureIssue) -> Exchange:
    _, local = ctx.locate(issue.packet_index)
    return _capture_error(
        ctx,
        f"{issue.kind} at packet {'?' if local is None else packet_number(local)} "
        f"(file offset {issue.file_offset}): {issue.detail}",
        packet=issue.packet_index,
    )


def _route(ev, kind, connections: dict, open_connection, skipped: set) -> list[Exchange]:
    if kind is FlowEvent:
        if ev.kind == "open":
            conn = open_connection(ev.conn, ev.initiator)
            if conn is None:
                skipped.add(ev.conn)
            else:
                connections[ev.conn] = conn
        elif ev.kind == "close":
            conn = connections.pop(ev.conn, None)
            if conn is not None:
                return conn.close(ev.detail)
        return []
    conn = connections.get(ev.conn)
    if conn is None:
        conn = open_connection(ev.conn, None)
        if conn is None:
            skipped.add(ev.conn)
            return []
        connections[ev.conn] = conn
    if kind is StreamChunk:
        return conn.chunk(ev)
    return conn.gap(ev) if kind is StreamGap else conn.conflict(ev)


def _internal_error(ctx: CaptureContext, conn: Connection | None, what: str) -> Exchange:
    """A failure of ours: said as such, with the connection it stopped, so it can be reported."""
    where = f"connection {conn.key}" if conn is not None else "the capture"
    return replace(
        _capture_error(ctx, f"kafka-wire failed reading {where} (a bug; the rest of the file is read): {what}"),
        status=INTERNAL_ERROR,
        connection_id=conn.connection_label() if conn is not None else None,
    )


class _HeadersCut:
    """The packets whose headers the snaplen cut (``_HEADERS_CUT``): how many, and the first."""

    __slots__ = ("count", "first", "last")

    def __init__(self) -> None:
        self.first: CaptureIssue | None = None
        self.last: CaptureIssue | None = None
        self.count = 0

    def add(self, issue: CaptureIssue) -> None:
        self.first, self.last, self.count = self.first or issue, issue, self.count + 1

    def file_ended(self, stop: CaptureIssue) -> None:
        """The file's reading stopped inside a packet (cut, or corrupt: a gzip stream that breaks):
        if that is the last one counted, that cut it, not a snaplen (the row of the file says so)."""
        if self.last is not None and self.last.packet_index == stop.packet_index:
            self.count -= 1
            self.last = None
            if not self.count:
                self.first = None


def _headers_cut_row(ctx: CaptureContext, first: CaptureIssue, count: int) -> Exchange:
    _, local = ctx.locate(first.packet_index)
    packets = f"{count} packets" if count > 1 else "1 packet"
    return _capture_error(
        ctx,
        f"{packets} cut by the capture's snaplen inside their headers (the first at packet "
        f"{'?' if local is None else packet_number(local)}: {first.detail}): their connections are not known, "
        "so what they carried is a gap only where other packets show the connection; a larger snaplen "
        "(tcpdump -s 0) keeps it",
        packet=first.packet_index,
    )


def _capture_error(ctx: CaptureContext, error: str, packet: int | None = None) -> Exchange:
    capture_file, local = ctx.locate(packet)
    return Exchange(
        capture_file=capture_file,
        connection_id=None,
        client_address=None,
        broker_address=None,
        request_time=None,
        response_time=None,
        latency_ms=None,
        api_key=None,
        api_name=None,
        api_version=None,
        correlation_id=None,
        client_id=None,
        request_size=None,
        response_size=None,
        request=None,
        response=None,
        status=CAPTURE_ERROR,
        error=error,
        request_packet=local,
        completed_at=packet if packet is not None else ctx.position,
    )
