"""Length-prefixed stream dumps: the raw bytes of one direction of a Kafka connection.

A dump is recognised by content (a run of int32 size-prefixed frames), not by name. Files named
the way tcpflow names them (``SRCIP.SRCPORT-DSTIP.DSTPORT``, e.g.
``127.000.000.001.54321-127.000.000.001.09092``) pair with their reverse-named sibling: the
side whose frames decode as requests is the client, and the other side's responses are paired
with them. A broker-side file read alone gives its responses as ``request_missing``; when its
sibling is the client side, the pair is read once, through the client file. Dumps carry no
capture times, so exchange times are null.

A tcpflow-named file may start mid-frame (tcpflow joined the connection mid-stream): it is
read from the first position in its first 64 KiB where a request header, or responses whose
correlation ids count up, start a run of frames to the end of what was sniffed, and the bytes
before it are a gap row that says so. A file without such a name must be frames from its first
byte (content alone is weak evidence of a dump).
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from itertools import pairwise

from .model import Exchange
from .pairing import Pairer
from .sniff import (
    RESPONSE_STEP,
    chained_ids,
    read_request_header,
    request_ids_at,
    request_start_check,
    response_ids_at,
    response_start_check,
)
from .splitter import DirectionFramer, Skipped

_TCPFLOW_NAME = re.compile(r"^(?P<src>.+)\.(?P<sport>\d{1,5})-(?P<dst>.+)\.(?P<dport>\d{1,5})$")
_SIZE = struct.Struct(">i")
_SNIFF_BYTES = 1 << 16
_READ = 1 << 20


def tcpflow_endpoints(path: str) -> tuple[str, int, str, int] | None:
    match = _TCPFLOW_NAME.match(os.path.basename(path))
    if not match:
        return None
    return (_ip(match["src"]), int(match["sport"]), _ip(match["dst"]), int(match["dport"]))


def _ip(text: str) -> str:
    parts = text.split(".")
    if len(parts) == 4 and all(p.isdigit() for p in parts):
        return ".".join(str(int(p)) for p in parts)  # tcpflow zero-pads: 127.000.000.001
    return text


def _sibling(path: str) -> str | None:
    match = _TCPFLOW_NAME.match(os.path.basename(path))
    if match is None:
        return None
    name = f"{match['dst']}.{match['dport']}-{match['src']}.{match['sport']}"
    candidate = os.path.join(os.path.dirname(path), name)
    return candidate if os.path.isfile(candidate) else None


def _head(path: str) -> bytes:
    """The first bytes of ``path``; none when it cannot be read (a directory, a file gone): no dump."""
    try:
        with open(path, "rb") as f:
            return f.read(_SNIFF_BYTES)
    except OSError:
        return b""


def role(path: str, ctx) -> str | None:
    """ "client" if the file holds requests, "broker" if responses, None if it is no dump.

    A run of size-prefixed frames is a dump. A response read as a request header can pass
    (correlation id 1 reads as api key 0, version 1), so with a sibling the side whose request
    ids the other side answers is the client, and alone, a file of requests carries ids that
    change from frame to frame.
    """
    found = _dump_head(path, ctx)
    if found is None:
        return None
    head = found[1]
    sibling = _sibling(path)
    other_found = _dump_head(sibling, ctx) if sibling else None
    other = other_found[1] if other_found else b""
    if other:
        as_client = len(set(_request_ids(head, ctx)) & set(_response_ids(other)))
        as_broker = len(set(_request_ids(other, ctx)) & set(_response_ids(head)))
        if as_client != as_broker:
            return "client" if as_client > as_broker else "broker"
    ids = _request_ids(head, ctx)
    return "client" if ids and (len(ids) == 1 or len(set(ids)) > 1) else "broker"


def _dump_head(path: str, ctx) -> tuple[int, bytes] | None:
    """Where a dump's frames start, and its first bytes from there; None if it is no dump."""
    head = _head(path)
    named = tcpflow_endpoints(path) is not None
    if _chains(head, ctx) and (named or _frames_fit(path, ctx)):
        return 0, head
    if not named:
        return None
    start = _mid_stream_start(head, ctx)
    return None if start is None else (start, head[start:])


def _frames_fit(path: str, ctx, frames: int = 16) -> bool:
    """For a file without a tcpflow name (content alone is weak evidence: any file whose first
    bytes read as a size passes for a frame): whether its first frame ends within it, and either
    the file ends there or another frame follows (the first ``frames`` sizes all plausible)."""
    try:
        with open(path, "rb") as f:
            end = os.fstat(f.fileno()).st_size
            pos = whole = 0
            while whole < frames and pos + 4 <= end:
                f.seek(pos)
                (size,) = _SIZE.unpack(f.read(4))
                if not 4 <= size <= ctx.max_frame_size:
                    return False
                if pos + 4 + size > end:
                    return whole >= 1  # a frame begun after a whole one: cut where the dump ends
                pos += 4 + size
                whole += 1
    except OSError:
        return False
    return whole >= 1


def _mid_stream_start(head: bytes, ctx) -> int | None:
    """The first position where a request header, or two responses with correlation ids that
    count up, start frames that run to the end of ``head`` (a frame may run past it)."""
    for pos in range(1, len(head) - 8):
        if not _chains(head, ctx, pos):
            continue
        if read_request_header(head, pos, ctx.known, strict=True, max_frame_size=ctx.max_frame_size):
            return pos
        ids = chained_ids(head, pos, lambda p: response_ids_at(head, p))
        if len(ids) >= 2 and all(0 < b - a <= RESPONSE_STEP for a, b in pairwise(ids)):
            return pos
    return None


def _chains(head: bytes, ctx, pos: int = 0, frames: int = 1) -> bool:
    """Whether ``head`` from ``pos`` is a run of plausible size-prefixed frames (at least
    ``frames`` of them begun in it)."""
    if len(head) - pos < 8:
        return False
    n = 0
    while pos + 4 <= len(head):
        (size,) = _SIZE.unpack_from(head, pos)
        if not 4 <= size <= ctx.max_frame_size:
            return False
        pos += 4 + size
        n += 1
    return n >= frames


def _request_ids(head: bytes, ctx) -> list[int]:
    if not read_request_header(head, 0, ctx.known, strict=True, max_frame_size=ctx.max_frame_size):
        return []
    return chained_ids(head, 0, lambda p: request_ids_at(head, p))


def _response_ids(head: bytes) -> list[int]:
    return chained_ids(head, 0, lambda p: response_ids_at(head, p))


def is_dump(path: str, ctx) -> bool:
    return role(path, ctx) is not None


def cut_dump_hint(path: str, ctx) -> str | None:
    """For a file that is no dump by ``_frames_fit`` only: what it would be, a dump cut inside its
    first frame (a raw stream saved as a capture stopped), and how to have it read as one."""
    head = _head(path)
    if tcpflow_endpoints(path) is not None or not _chains(head, ctx):
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    (claimed,) = _SIZE.unpack_from(head)
    if 4 + claimed <= size:
        return None
    return (
        f"it begins as a stream dump whose first frame claims {claimed} bytes, of which the file holds"
        f" {size - 4}: a dump cut short? Named as tcpflow names its files (SRCIP.SRCPORT-DSTIP.DSTPORT),"
        " it is read as one"
    )


def read_dump(path: str, ctx) -> Iterator[Exchange]:
    mine = role(path, ctx)
    sibling = _sibling(path)
    sibling_role = role(sibling, ctx) if sibling else None
    if mine == "broker" and sibling_role == "client":
        return  # read once, through the client file
    client_file, broker_file = (
        (path, sibling if sibling_role == "broker" else None) if mine == "client" else (None, path)
    )
    ends = tcpflow_endpoints(client_file or path)
    if ends is None:
        client_addr, broker_addr = None, None
    elif client_file:
        client_addr, broker_addr = f"{ends[0]}:{ends[1]}", f"{ends[2]}:{ends[3]}"
    else:
        client_addr, broker_addr = f"{ends[2]}:{ends[3]}", f"{ends[0]}:{ends[1]}"
    connection_id = f"{client_addr}->{broker_addr}" if ends else os.path.basename(path)
    pairer = Pairer(ctx, connection_id, client_addr, broker_addr)
    if client_file:
        framer = DirectionFramer(
            request_start_check(ctx.known, ctx.max_frame_size, pairer.client_ids, ctx.decoder.request_reads),
            ctx.max_frame_size,
            True,
        )
        yield from _feed(client_file, framer, pairer, True, ctx)
    if broker_file:
        framer = DirectionFramer(response_start_check(ctx.max_frame_size, pairer.pending_ids), ctx.max_frame_size, True)
        yield from _feed(broker_file, framer, pairer, False, ctx)
    yield from pairer.finish()


def _feed(path: str, framer: DirectionFramer, pairer: Pairer, is_request: bool, ctx) -> Iterator[Exchange]:
    found = _dump_head(path, ctx)
    offset = found[0] if found else 0
    if offset:
        why = "the dump starts mid-frame (tcpflow joined the connection mid-stream): bytes before the first frame"
        yield from pairer.take([Skipped(0, offset, None, None, why)], is_request)
    with open(path, "rb") as f:
        f.seek(offset)
        while True:
            data = f.read(_READ)
            yield from pairer.take(framer.feed(offset, data, 0, None) if data else framer.finish(), is_request)
            if not data:
                return
            offset += len(data)
