"""``read_capture``: one capture file (or stream dump) in, Kafka exchanges out.

Wires the stages together (capture readers -> TCP reassembly -> connections -> pairing) and
streams: exchanges are yielded as they complete, and nothing holds a whole file. Problems with
the file itself (a truncated last record, an unsupported link type) become exchanges with
status ``capture_error`` so they are seen, not lost. No exception escapes for a file that could
be opened: a failure of ours inside one connection becomes an ``internal_error`` row for that
connection and the rest of the file is still read.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache

from ..capture import CaptureError, CaptureIssue, TcpSegment, read_packets
from ..capture.source import detect_format
from ..codec.decoder import decoder_for
from ..spec.headers import request_header_version
from ..tcp import DEFAULT_MAX_BUFFERED_BYTES, FlowEvent, StreamChunk, StreamGap, reassemble
from .connection import Connection
from .context import DEFAULT_PORTS, FILE_SHIFT, CaptureContext
from .dumps import is_dump, read_dump
from .model import INTERNAL_ERROR, Exchange
from .sniff import KnownApis

CAPTURE_ERROR = "capture_error"
# Packet-level issues that the tcp stage already turns into gaps of the streams they cut.
_SHOWN_AS_GAPS = {"snaplen_cut"}


def read_capture(path: str | os.PathLike | Sequence[str | os.PathLike], *,
                 ports: Iterable[int] | None = DEFAULT_PORTS, detect_kafka: bool = True,
                 max_frame_size: int = 100 * 1024 * 1024, max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
                 specs: str | None = None, apis: Iterable[int] | None = None,
                 window_ns: tuple[int | None, int | None] | None = None,
                 connection_slice: tuple[int, int] = (0, 1),
                 shared_apis: Iterable[int] | None = None,
                 packet_limits: Mapping[str, int] | None = None) -> Iterator[Exchange]:
    """Yield every Kafka exchange in the capture at ``path``.

    ``path`` may be a list of captures of one session (rotated files, in time order): they are
    read as one capture, so connections, frames and exchanges span files; each row's
    ``capture_file`` is the file where its exchange started. ``packet_limits``: read at most
    this many packets of the files it names (a file still being written).

    ``ports``: broker ports (the other side is the client; ``None``: none, find Kafka by content);
    ``detect_kafka``: also find Kafka on other ports, by a request start in the bytes of a side; ``max_frame_size``: a larger
    claimed frame size is a framing error; ``max_buffered_bytes``: out-of-order bytes held per
    TCP direction before giving up on a hole; ``specs``: a directory of message definitions to
    decode with instead of the bundled ones. ``apis`` and ``window_ns`` (request times, ns since
    the epoch, either end open) keep only matching exchanges, without decoding the others.
    ``connection_slice=(i, n)``: only TCP connections whose endpoints hash to ``i`` modulo ``n``
    (with file-level problems reported by slice 0), so ``n`` readers can share one capture.
    ``shared_apis``: with a slice, also read the other connections, but for these apis only (the
    records view needs every Metadata response to name the topics its own Fetches refer to by id).
    """
    paths = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
    path = paths[0]
    known, names = _bundled_knowledge()
    ctx = CaptureContext(path, decoder_for(specs), frozenset(int(p) for p in ports or ()), detect_kafka,
                         max_frame_size, frozenset(apis) if apis is not None else None, window_ns,
                         known=known, bundled_names=names, files=tuple(paths))
    try:
        detect_format(path)
    except CaptureError as not_a_capture:
        if is_dump(path, ctx):
            yield from read_dump(path, ctx)
        else:
            yield _capture_error(ctx, f"not a pcap, pcapng or Kafka stream dump: {not_a_capture}")
        return
    if connection_slice[0] != 0 and not _splittable(path):
        return
    shared = None
    if connection_slice[1] > 1 and shared_apis is not None:
        shared = replace(ctx, apis=frozenset(shared_apis) & ctx.apis if ctx.apis is not None else frozenset(shared_apis))
    yield from _read_packets(paths, ctx, max_buffered_bytes, connection_slice, shared, packet_limits or {})


@lru_cache(maxsize=1)
def _bundled_knowledge():
    """What finding Kafka relies on, from the bundled definitions whatever ``specs`` says (see ``sniff``)."""
    registry = decoder_for(None).registry
    names = {key: registry.api_name(key) for key in registry.api_keys()}
    return KnownApis.from_registry(registry, request_header_version), names


def _splittable(path: str) -> bool:
    try:
        detect_format(path)
    except CaptureError:
        return False
    return True


def _slice_of(a_ip: str, a_port: int, b_ip: str, b_port: int, count: int) -> int:
    """Which slice a connection belongs to; endpoints in the tcp stage's canonical order."""
    return zlib.crc32(f"{a_ip}|{a_port}|{b_ip}|{b_port}".encode()) % count


def _in_slice(segments, connection_slice: tuple[int, int]):
    index, count = connection_slice
    for item in segments:
        if type(item) is TcpSegment:
            a, b = (item.src_ip, item.src_port), (item.dst_ip, item.dst_port)
            if _slice_of(*(a + b if a <= b else b + a), count) != index:
                continue
        elif index != 0:
            continue  # capture issues are reported once, by slice 0
        yield item


def _session_packets(paths: list[str], ctx: CaptureContext, shared: CaptureContext | None,
                     limits: Mapping[str, int]) -> Iterator:
    """The segments and issues of every file in turn, with global packet indices (see ``locate``);
    keeps ``ctx.position`` at the packet being read."""
    contexts = (ctx,) if shared is None else (ctx, shared)
    for number, path in enumerate(paths):
        limit = limits.get(path)
        shift = number << FILE_SHIFT
        items = read_packets(path)
        while True:
            try:
                item = next(items, None)
            except (CaptureError, OSError) as e:  # gone, or unreadable, since the read was planned
                item = CaptureIssue(0, 0, "corrupt_file", f"{os.path.basename(path)}: {e}")
                items = iter(())
            if item is None:
                break
            if limit is not None and item.packet_index >= limit:
                break
            if shift:
                item = replace(item, packet_index=item.packet_index + shift)
            for c in contexts:
                c.position = item.packet_index
            yield item
    for c in contexts:
        c.position = None


def _read_packets(paths: list[str], ctx: CaptureContext, max_buffered_bytes: int, connection_slice,
                  shared: CaptureContext | None, limits: Mapping[str, int]) -> Iterator[Exchange]:
    connections: dict = {}
    out = ctx.out
    segments = _session_packets(paths, ctx, shared, limits)
    index, count = connection_slice
    if count > 1 and shared is None:
        segments = _in_slice(segments, connection_slice)

    def context_of(key) -> CaptureContext:
        if shared is None or _slice_of(key.a_ip, key.a_port, key.b_ip, key.b_port, count) == index:
            return ctx
        return shared

    dead: set = set()  # connections a failure of ours stopped reading
    events = reassemble(segments, max_buffered_bytes=max_buffered_bytes)
    while True:
        try:
            ev = next(events, None)
        except Exception as e:  # noqa: BLE001 - a bug below us ends the file, not the job
            out.append(_internal_error(ctx, None, f"reading stopped: {type(e).__name__}: {e}"))
            ev = None
        if ev is None:
            break
        kind = type(ev)
        if kind is CaptureIssue:
            if ev.kind not in _SHOWN_AS_GAPS and ctx.wanted(None, None) and index == 0:
                _, local = ctx.locate(ev.packet_index)
                out.append(_capture_error(ctx, f"{ev.kind} at packet {local} (file offset {ev.file_offset}): "
                                               f"{ev.detail}", packet=ev.packet_index))
        elif ev.conn not in dead:
            try:
                _route(ev, kind, connections, context_of)
            except Exception as e:  # noqa: BLE001 - one connection's failure is that connection's row
                dead.add(ev.conn)
                failed = connections.pop(ev.conn, None)
                out.append(_internal_error(ctx, failed, f"{type(e).__name__}: {e}"))
        if out:
            yield from out
            out.clear()
    for key, conn in connections.items():
        try:
            conn.close()
        except Exception as e:  # noqa: BLE001
            out.append(_internal_error(ctx, conn, f"{type(e).__name__}: {e}"))
    yield from out
    out.clear()


def _route(ev, kind, connections: dict, context_of) -> None:
    if kind is StreamChunk or kind is StreamGap:
        conn = connections.get(ev.conn)
        if conn is None:
            conn = connections[ev.conn] = Connection(ev.conn, context_of(ev.conn), None)
        if kind is StreamChunk:
            conn.chunk(ev)
        else:
            conn.gap(ev)
    elif kind is FlowEvent:
        if ev.kind == "open":
            connections[ev.conn] = Connection(ev.conn, context_of(ev.conn), ev.initiator)
        elif ev.kind == "close":
            conn = connections.pop(ev.conn, None)
            if conn is not None:
                conn.close(ev.detail)


def _internal_error(ctx: CaptureContext, conn: Connection | None, what: str) -> Exchange:
    """A failure of ours: said as such, with the connection it stopped, so it can be reported."""
    where = f"connection {conn.key}" if conn is not None else "the capture"
    return replace(_capture_error(ctx, f"kafka-wire failed reading {where} (a bug; the rest of the file is read): "
                                       f"{what}"),
                   status=INTERNAL_ERROR, connection_id=conn.connection_label() if conn is not None else None)


def _capture_error(ctx: CaptureContext, error: str, packet: int | None = None) -> Exchange:
    capture_file, local = ctx.locate(packet)
    return Exchange(
        capture_file=capture_file, connection_id=None, client_address=None, broker_address=None,
        request_time=None, response_time=None, latency_ms=None, api_key=None, api_name=None, api_version=None,
        correlation_id=None, client_id=None, request_size=None, response_size=None, request=None, response=None,
        status=CAPTURE_ERROR, error=error, request_packet=local,
        completed_at=packet if packet is not None else ctx.position)
