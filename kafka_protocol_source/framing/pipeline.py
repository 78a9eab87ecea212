"""``read_capture``: one capture file (or stream dump) in, Kafka exchanges out.

Wires the stages together (capture readers -> TCP reassembly -> connections -> pairing) and
streams: exchanges are yielded as they complete, and nothing holds a whole file. Problems with
the file itself (a truncated last record, an unsupported link type) become exchanges with
status ``capture_error`` so they are seen, not lost.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import replace
from collections.abc import Iterable, Iterator

from ..capture import CaptureError, CaptureIssue, TcpSegment, read_packets
from ..capture.source import detect_format
from ..codec.decoder import decoder_for
from ..tcp import DEFAULT_MAX_BUFFERED_BYTES, FlowEvent, StreamChunk, StreamGap, reassemble
from .connection import Connection
from .context import DEFAULT_PORTS, CaptureContext
from .dumps import is_dump, read_dump
from .model import Exchange

CAPTURE_ERROR = "capture_error"
# Packet-level issues that the tcp stage already turns into gaps of the streams they cut.
_SHOWN_AS_GAPS = {"snaplen_cut"}


def read_capture(path: str | os.PathLike, *, ports: Iterable[int] = DEFAULT_PORTS, detect_kafka: bool = True,
                 max_frame_size: int = 100 * 1024 * 1024, max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
                 specs: str | None = None, apis: Iterable[int] | None = None,
                 window_ns: tuple[int | None, int | None] | None = None,
                 connection_slice: tuple[int, int] = (0, 1),
                 shared_apis: Iterable[int] | None = None) -> Iterator[Exchange]:
    """Yield every Kafka exchange in the capture at ``path``.

    ``ports``: broker ports (the other side is the client); ``detect_kafka``: also find Kafka on
    other ports by decoding the first request of each connection; ``max_frame_size``: a larger
    claimed frame size is a framing error; ``max_buffered_bytes``: out-of-order bytes held per
    TCP direction before giving up on a hole; ``specs``: a directory of message definitions to
    decode with instead of the bundled ones. ``apis`` and ``window_ns`` (request times, ns since
    the epoch, either end open) keep only matching exchanges, without decoding the others.
    ``connection_slice=(i, n)``: only TCP connections whose endpoints hash to ``i`` modulo ``n``
    (with file-level problems reported by slice 0), so ``n`` readers can share one capture.
    ``shared_apis``: with a slice, also read the other connections, but for these apis only (the
    records view needs every Metadata response to name the topics its own Fetches refer to by id).
    """
    path = os.fspath(path)
    ctx = CaptureContext(path, decoder_for(specs), frozenset(int(p) for p in ports), detect_kafka, max_frame_size,
                         frozenset(apis) if apis is not None else None, window_ns)
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
    yield from _read_packets(path, ctx, max_buffered_bytes, connection_slice, shared)


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


def _read_packets(path: str, ctx: CaptureContext, max_buffered_bytes: int, connection_slice,
                  shared: CaptureContext | None) -> Iterator[Exchange]:
    connections: dict = {}
    out = ctx.out
    segments = read_packets(path)
    index, count = connection_slice
    if count > 1 and shared is None:
        segments = _in_slice(segments, connection_slice)

    def context_of(key) -> CaptureContext:
        if shared is None or _slice_of(key.a_ip, key.a_port, key.b_ip, key.b_port, count) == index:
            return ctx
        return shared

    for ev in reassemble(segments, max_buffered_bytes=max_buffered_bytes):
        kind = type(ev)
        if kind is StreamChunk:
            conn = connections.get(ev.conn)
            if conn is None:
                conn = connections[ev.conn] = Connection(ev.conn, context_of(ev.conn), None)
            conn.chunk(ev)
        elif kind is StreamGap:
            conn = connections.get(ev.conn)
            if conn is None:
                conn = connections[ev.conn] = Connection(ev.conn, context_of(ev.conn), None)
            conn.gap(ev)
        elif kind is FlowEvent:
            if ev.kind == "open":
                connections[ev.conn] = Connection(ev.conn, context_of(ev.conn), ev.initiator)
            elif ev.kind == "close":
                conn = connections.pop(ev.conn, None)
                if conn is not None:
                    conn.close(ev.detail)
        elif kind is CaptureIssue and ev.kind not in _SHOWN_AS_GAPS and ctx.wanted(None, None) and index == 0:
            out.append(_capture_error(ctx, f"{ev.kind} at packet {ev.packet_index} (file offset {ev.file_offset}): {ev.detail}",
                                      packet=ev.packet_index))
        if out:
            yield from out
            out.clear()
    for conn in connections.values():
        conn.close()
    yield from out
    out.clear()


def _capture_error(ctx: CaptureContext, error: str, packet: int | None = None) -> Exchange:
    return Exchange(
        capture_file=ctx.capture_file, connection_id=None, client_address=None, broker_address=None,
        request_time=None, response_time=None, latency_ms=None, api_key=None, api_name=None, api_version=None,
        correlation_id=None, client_id=None, request_size=None, response_size=None, request=None, response=None,
        status=CAPTURE_ERROR, error=error, request_packet=packet)
