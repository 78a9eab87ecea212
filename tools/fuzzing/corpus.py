"""The seed material: the sample captures, and the real Kafka frames inside them.

Owns: listing ``sample_captures/`` (every pcap and pcapng, and the tcpflow dump pair), and
cutting real request and response frames out of the captures with a reassembly of our own
(the samples are clean loopback captures: in-order segments, retransmissions dropped by
sequence number), each response paired with its request's api key and version through the
correlation id. Only the request header is read here (with ``struct``), never the body.
Does not mutate anything.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from . import pcapio

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_captures"
MAX_CORPUS_FRAME = 1 << 20  # frames above this are left out: inputs stay under 1 MB


@dataclass(frozen=True)
class RealFrame:
    """One frame (without its size prefix) with what decoding it needs."""

    direction: str  # "request" or "response"
    payload: bytes
    api_key: int
    api_version: int
    source: str  # sample file it came from
    request: bytes | None = None  # responses: the request frame they answer


def capture_paths() -> list[Path]:
    return sorted(p for p in SAMPLES.iterdir() if p.suffix in (".pcap", ".pcapng"))


def dump_dirs() -> list[Path]:
    return sorted(p for p in SAMPLES.iterdir() if p.is_dir())


@cache
def sample_bytes(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


@cache
def sample_capture(name: str) -> pcapio.Capture:
    return pcapio.read(sample_bytes(name))


def _streams(capture: pcapio.Capture) -> dict[tuple, bytes]:
    """Payload bytes of every TCP direction, in sequence order, duplicates dropped."""
    segments: dict[tuple, dict[int, bytes]] = defaultdict(dict)
    for packet in capture.packets:
        linktype = capture.interfaces[packet.iface].linktype
        span = pcapio.tcp_span(linktype, packet.data)
        flow = pcapio.flow_of(linktype, packet.data)
        if span is None or flow is None or span.end <= span.payload:
            continue
        src, sport, dst, dport, seq, _ = flow
        segments[(src, sport, dst, dport)].setdefault(seq, packet.data[span.payload : span.end])
    streams = {}
    for key, by_seq in segments.items():
        out, expected = bytearray(), None
        for seq in sorted(by_seq):
            data = by_seq[seq]
            if expected is not None and seq < expected:
                data = data[expected - seq :]
            out += data
            expected = seq + len(by_seq[seq]) if expected is None else max(expected, seq + len(by_seq[seq]))
        streams[key] = bytes(out)
    return streams


def split_frames(stream: bytes) -> list[bytes]:
    frames, pos = [], 0
    while pos + 4 <= len(stream):
        (size,) = struct.unpack_from(">i", stream, pos)
        if size < 0 or pos + 4 + size > len(stream):
            break
        frames.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return frames


def _client_side(frames: list[bytes], other: list[bytes]) -> bool:
    """A client's first frame is a request whose correlation id opens the other side's first frame."""
    return bool(frames) and bool(other) and len(frames[0]) >= 8 and frames[0][4:8] == other[0][:4]


def pair_frames(requests: list[bytes], responses: list[bytes], source: str) -> list[RealFrame]:
    out, pending = [], {}
    for frame in requests:
        if len(frame) < 8:
            continue
        api_key, version, correlation = struct.unpack_from(">hhi", frame)
        pending[correlation] = frame
        out.append(RealFrame("request", frame, api_key, version, source))
    for frame in responses:
        if len(frame) < 4:
            continue
        request = pending.get(struct.unpack_from(">i", frame)[0])
        if request is not None:
            api_key, version = struct.unpack_from(">hh", request)
            out.append(RealFrame("response", frame, api_key, version, source, request))
    return out


def frames_of_capture(name: str) -> list[RealFrame]:
    streams = _streams(sample_capture(name))
    out = []
    for (src, sport, dst, dport), data in streams.items():
        requests = split_frames(data)
        responses = split_frames(streams.get((dst, dport, src, sport), b""))
        if _client_side(requests, responses):
            out += pair_frames(requests, responses, name)
    return out


def frames_of_dump(directory: Path) -> list[RealFrame]:
    files = {p: split_frames(p.read_bytes()) for p in sorted(directory.iterdir())}
    out = []
    for client, requests in files.items():
        for other, responses in files.items():
            if other != client and _client_side(requests, responses):
                out += pair_frames(requests, responses, f"{directory.name}/{client.name}")
    return out


@lru_cache(maxsize=1)
def real_frames() -> tuple[RealFrame, ...]:
    """Every real frame of every sample, deduplicated, in a fixed order."""
    seen, out = set(), []
    found = [f for p in capture_paths() for f in frames_of_capture(p.name)]
    found += [f for d in dump_dirs() for f in frames_of_dump(d)]
    for frame in found:
        key = (frame.direction, frame.payload, frame.api_key, frame.api_version, frame.request)
        if key not in seen and len(frame.payload) <= MAX_CORPUS_FRAME:
            seen.add(key)
            out.append(frame)
    return tuple(out)
