"""Captures cut the way real ones are: started late, started mid-segment, one side missing, in pieces.

Works on TCP segments: a capture is read with the project's packet reader, cut, and written
back as an Ethernet pcap (nanosecond timestamps) with each segment rebuilt byte for byte, so
the TCP stream contents are exactly the original ones. Every segment keeps the index of the
packet it came from in the original file (``Cut.origin``), so a test can tell which exchanges
lie wholly after a cut.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from kafka_protocol_source.capture import TcpSegment, read_packets
from kafka_protocol_source.capture.model import FIN as _FIN

from .capture import pcapbuild as pb


@dataclass(frozen=True)
class Cut:
    segments: tuple[TcpSegment, ...]

    @property
    def origin(self) -> int | None:
        """Packet index (in the original file) of the first segment kept."""
        return self.segments[0].packet_index if self.segments else None

    def write(self, path: Path) -> Path:
        packets = [(s.timestamp_ns, _frame(s)) for s in self.segments]
        path.write_bytes(pb.pcap(packets, linktype=1, nanos=True))
        return path

    def write_cooked(self, path: Path, lag_ns: int = 3_000) -> Path:
        """The segments as a second interface (Linux cooked, SLL2, as ``-i any`` captures) sees
        them, ``lag_ns`` later."""
        packets = []
        for s in self.segments:
            ip = pb.ipv4(s.src_ip, s.dst_ip, pb.tcp(s.src_port, s.dst_port, s.seq, s.ack, s.flags, s.payload))
            packets.append((s.timestamp_ns + lag_ns, pb.sll2(ip)))
        path.write_bytes(pb.pcap(packets, linktype=276, nanos=True))
        return path


def segments_of(path) -> tuple[TcpSegment, ...]:
    return tuple(s for s in read_packets(path) if isinstance(s, TcpSegment))


def late_start(segments, first: int) -> Cut:
    """The capture starts at segment ``first``."""
    return Cut(tuple(segments[first:]))


def mid_segment(segments, first: int, trim: int) -> Cut:
    """The capture starts at the first payload-carrying segment from ``first``, minus its first bytes."""
    kept = list(segments[first:])
    for i, s in enumerate(kept):
        if len(s.payload) > trim:
            kept[i] = s._replace(seq=(s.seq + trim) & 0xFFFFFFFF, payload=s.payload[trim:])
            return Cut(tuple(kept[i:]))
    return Cut(tuple(kept))


def one_side(segments, keep_port: int) -> Cut:
    """Payloads only from the side whose source port is ``keep_port`` (the other side's ACKs stay)."""
    return Cut(tuple(s if s.src_port == keep_port else s._replace(payload=b"", missing=0) for s in segments))


def by_direction(segments, broker_port: int) -> tuple[Cut, Cut]:
    """The segments sent to the broker, and those it sent: as captures of each direction apart."""
    return (
        Cut(tuple(s for s in segments if s.dst_port == broker_port)),
        Cut(tuple(s for s in segments if s.dst_port != broker_port)),
    )


def resegmented(segments, size: int) -> list[TcpSegment]:
    """Every payload in segments of at most ``size`` bytes, as a smaller MSS sends it (a FIN stays
    on the last piece): the same streams, with responses that span packets."""
    out = []
    for s in segments:
        if len(s.payload) <= size:
            out.append(s)
            continue
        for at in range(0, len(s.payload), size):
            last = at + size >= len(s.payload)
            flags = s.flags if last else s.flags & ~_FIN
            out.append(s._replace(seq=(s.seq + at) & 0xFFFFFFFF, payload=s.payload[at : at + size], flags=flags))
    return out


def pieces(segments, count: int) -> list[Cut]:
    """``count`` consecutive pieces by segment count, as ``editcap -c`` cuts a capture."""
    size = -(-len(segments) // count)
    return [Cut(tuple(segments[i : i + size])) for i in range(0, len(segments), size)]


def _frame(s: TcpSegment) -> bytes:
    segment = pb.tcp(s.src_port, s.dst_port, s.seq, s.ack, s.flags, s.payload)
    if ipaddress.ip_address(s.src_ip).version == 6:
        return pb.ether(pb.ipv6(s.src_ip, s.dst_ip, segment), ethertype=0x86DD)
    return pb.ether(pb.ipv4(s.src_ip, s.dst_ip, segment))
