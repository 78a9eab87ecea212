"""The accounting invariant: every captured payload byte of a Kafka connection is in exactly one row.

For every TCP direction, the bytes the tcp stage delivered (its ``StreamChunk``s, retransmitted
copies already dropped) must equal the union of the ``request_span``/``response_span`` of the
rows of that direction, with no two rows claiming the same byte. A row's span may also cover
bytes a ``StreamGap`` said are missing: a frame a gap cut is one row, from its start to where its
size says it ends. Directions of connections that
produced no row at all are reported when the connection is on a configured port (there, nothing
may vanish); on other ports, a connection is only ours once detection called it Kafka. TLS
connections are one row for the whole connection and are checked by that row's byte counts.

That compares the rows with the tcp stage, so it cannot see bytes the tcp stage itself lost. So
the captured payload is also counted here without it: per TCP direction, the distinct sequence
numbers the capture's segments carry. The tcp stage must have delivered, or reported in a gap,
at least that many bytes of the direction (over all its uses of the 4-tuple).

``check_accounting(path, **read_capture_options)`` returns the violations found, as sentences;
an empty list means every byte is accounted for. ``tools/fuzz.py`` runs it on mutated captures.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from kafka_protocol_source import read_capture
from kafka_protocol_source.capture import RST, SYN, CaptureError, TcpSegment, read_packets
from kafka_protocol_source.capture.source import detect_format
from kafka_protocol_source.framing.connection import address
from kafka_protocol_source.framing.context import DEFAULT_PORTS
from kafka_protocol_source.framing.model import INTERNAL_ERROR, TLS
from kafka_protocol_source.tcp import StreamChunk, StreamGap, reassemble


def _label(src_ip, src_port, dst_ip, dst_port, instance) -> str:
    return f"{address(src_ip, src_port)}->{address(dst_ip, dst_port)}#{instance}"


def _reverse(label: str) -> str:
    ends, instance = label.rsplit("#", 1)
    client, broker = ends.split("->")
    return f"{broker}->{client}#{instance}"


def _merge(spans) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _until_error(items):
    """The packets up to a problem with the file, where read_capture stops too (with a row)."""
    try:
        yield from items
    except (CaptureError, OSError):
        return


def captured_bytes(path, max_buffered_bytes: int | None = None) -> dict[str, list[tuple[int, int]]]:
    """Per direction label (``client->broker#n`` style), the stream intervals the tcp stage delivered."""
    return _stream_intervals(path, max_buffered_bytes)[0]


def _stream_intervals(path, max_buffered_bytes: int | None = None) -> tuple[dict, dict]:
    """Per direction label, the stream intervals the tcp stage delivered, and those it said are missing."""
    options = {} if max_buffered_bytes is None else {"max_buffered_bytes": max_buffered_bytes}
    spans, holes = defaultdict(list), defaultdict(list)
    for ev in reassemble(_until_error(read_packets(path)), **options):
        if (type(ev) is StreamChunk and ev.data) or type(ev) is StreamGap:
            d = ev.direction
            label = _label(d.src_ip, d.src_port, d.dst_ip, d.dst_port, ev.conn.instance)
            if type(ev) is StreamChunk:
                spans[label].append((ev.offset, ev.offset + len(ev.data)))
            else:
                holes[label].append((ev.offset, ev.offset + ev.length))
    return {label: _merge(s) for label, s in spans.items()}, holes


def _direction(src_ip, src_port, dst_ip, dst_port) -> str:
    return f"{address(src_ip, src_port)}->{address(dst_ip, dst_port)}"


def payload_coverage(path) -> dict[str, int]:
    """Per direction (``src->dst``), how many distinct sequence numbers the payload of its
    segments covers, counted from the packets alone (sequence numbers unwrapped, each nearest
    the one before)."""
    spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
    last: dict[str, int] = {}
    for seg in _until_error(read_packets(path)):
        if type(seg) is not TcpSegment or not seg.payload or seg.flags & RST:
            continue  # (a RST's payload is not stream data)
        key = _direction(seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port)
        seq = (seg.seq + 1) & 0xFFFFFFFF if seg.flags & SYN else seg.seq
        before = last.get(key, seq)
        at = before + (((seq - before + 0x80000000) & 0xFFFFFFFF) - 0x80000000)
        last[key] = at
        spans[key].append((at, at + len(seg.payload)))
    return {key: sum(b - a for a, b in _merge(s)) for key, s in spans.items()}


def stage_coverage(path, max_buffered_bytes: int | None = None) -> dict[str, int]:
    """Per direction (``src->dst``, all uses of the 4-tuple), the bytes the tcp stage delivered
    or reported in a gap."""
    options = {} if max_buffered_bytes is None else {"max_buffered_bytes": max_buffered_bytes}
    total: dict[str, int] = defaultdict(int)
    for ev in reassemble(_until_error(read_packets(path)), **options):
        if type(ev) is StreamChunk or type(ev) is StreamGap:
            d = ev.direction
            total[_direction(d.src_ip, d.src_port, d.dst_ip, d.dst_port)] += (
                len(ev.data) if type(ev) is StreamChunk else ev.length
            )
    return total


def coverage_violations(path, max_buffered_bytes: int | None = None) -> list[str]:
    """Directions whose captured payload the tcp stage neither delivered nor reported in full."""
    stage = stage_coverage(path, max_buffered_bytes)
    return [
        f"{key}: the capture's segments carry {n} distinct payload bytes, the tcp stage delivered or reported "
        f"{stage.get(key, 0)}"
        for key, n in payload_coverage(path).items()
        if stage.get(key, 0) < n
    ]


def check_accounting(path, **options) -> list[str]:
    try:
        detect_format(str(path))
    except Exception:  # noqa: BLE001 - dumps and non-captures have no tcp stage to compare with
        return []
    rows = list(read_capture(path, **options))
    violations: list[str] = []
    claimed = defaultdict(list)
    whole = set()  # directions a single row stands for (TLS) or that a failure of ours stopped
    for row in rows:
        if row.connection_id is None:
            continue
        reverse = _reverse(row.connection_id) if "->" in row.connection_id else None
        if row.status in (TLS, INTERNAL_ERROR):
            if row.status == INTERNAL_ERROR:
                violations.append(f"{row.connection_id}: {row.error}")
            whole.update({row.connection_id, reverse})
            continue
        for label, span in ((row.connection_id, row.request_span), (reverse, row.response_span)):
            if span is not None and span[1]:
                claimed[label].append((span[0], span[0] + span[1]))
    violations += coverage_violations(path, options.get("max_buffered_bytes"))
    captured, holes = _stream_intervals(path, options.get("max_buffered_bytes"))
    kafka = {label for label in claimed} | {_reverse(label) for label in claimed}
    kafka |= {row.connection_id for row in rows if row.connection_id and "->" in row.connection_id}
    kafka |= {_reverse(row.connection_id) for row in rows if row.connection_id and "->" in row.connection_id}
    ports = options.get("ports", DEFAULT_PORTS)
    ports = set(ports or ())
    for label, intervals in captured.items():
        if label in whole:
            continue
        if label not in kafka:
            ends = label.rsplit("#", 1)[0].split("->")
            on_port = {int(e.rsplit(":", 1)[1]) for e in ends} & ports
            if on_port and len({int(e.rsplit(":", 1)[1]) for e in ends} & ports) == 1:
                violations.append(
                    f"{label}: {sum(b - a for a, b in intervals)} captured bytes on a broker port "
                    f"and no row for the connection"
                )
            continue
        spans = sorted(claimed.get(label, []))
        for (a1, b1), (a2, b2) in itertools.pairwise(spans):
            if a2 < b1:
                violations.append(f"{label}: rows claim bytes [{a1}, {b1}) and [{a2}, {b2}) twice")
        got = _merge(spans + holes.get(label, []))
        if got != _merge(intervals + holes.get(label, [])):
            have = sum(b - a for a, b in intervals)
            rows_hold = sum(b - a for a, b in got)
            violations.append(
                f"{label}: captured {have} bytes in {intervals[:4]}{'...' if len(intervals) > 4 else ''}, "
                f"rows hold {rows_hold} in {got[:4]}{'...' if len(got) > 4 else ''}"
            )
    return violations
