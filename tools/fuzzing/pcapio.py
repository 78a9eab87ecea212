"""Captures as lists of packets, and back: the record-level view the capture mutators work on.

Owns: reading a well-formed pcap or pcapng file (the sample captures) into a `Capture`, writing
one out again as pcap (either byte order, micro or nano) or pcapng (any number of interfaces),
and finding the TCP payload inside a packet so it can be edited with its lengths kept right.
Written independently of ``kafka_protocol_source.capture`` on purpose: the fuzzer must not lean
on the reader it attacks. Does not mutate anything itself (see `capture_cases`).
"""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass, field, replace

PCAP_MAGIC_US, PCAP_MAGIC_NS = 0xA1B2C3D4, 0xA1B23C4D
SHB, IDB, EPB, SPB, PB = 0x0A0D0D0A, 1, 6, 3, 2
ETHERNET, RAW_IP, SLL, SLL2 = 1, 101, 113, 276


@dataclass(frozen=True)
class Interface:
    linktype: int
    snaplen: int = 262144
    tsresol: int | None = 9  # pcapng if_tsresol option value; None: leave the option out (default 6)
    tsoffset: int | None = None  # pcapng if_tsoffset, seconds


@dataclass(frozen=True)
class Packet:
    ts_ns: int
    data: bytes
    orig_len: int
    iface: int = 0


@dataclass
class Capture:
    packets: list[Packet]
    interfaces: list[Interface] = field(default_factory=lambda: [Interface(ETHERNET)])
    container: str = "pcap"  # "pcap" or "pcapng"
    nano: bool = False  # pcap timestamps in nanoseconds
    big_endian: bool = False

    def with_packets(self, packets: list[Packet]) -> Capture:
        return replace(self, packets=list(packets))


# -- reading --------------------------------------------------------------------------------


def read(data: bytes) -> Capture:
    """Parse a well-formed capture (optionally gzipped); raises ValueError on anything else."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        return _read_pcapng(data)
    return _read_pcap(data)


def _read_pcap(data: bytes) -> Capture:
    for endian in "<>":
        (magic,) = struct.unpack_from(endian + "I", data)
        if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            break
    else:
        raise ValueError("not a pcap file")
    nano = magic == PCAP_MAGIC_NS
    snaplen, network = struct.unpack_from(endian + "II", data, 16)
    packets, pos = [], 24
    while pos + 16 <= len(data):
        sec, frac, caplen, orig = struct.unpack_from(endian + "IIII", data, pos)
        packets.append(Packet(sec * 10**9 + frac * (1 if nano else 1000), data[pos + 16 : pos + 16 + caplen], orig))
        pos += 16 + caplen
    return Capture(packets, [Interface(network & 0xFFFF, snaplen)], "pcap", nano, endian == ">")


def _read_pcapng(data: bytes) -> Capture:
    endian = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
    interfaces, packets, pos = [], [], 0
    while pos + 12 <= len(data):
        btype, total = struct.unpack_from(endian + "II", data, pos)
        body = data[pos + 8 : pos + total - 4]
        if btype == IDB:
            linktype, _, snaplen = struct.unpack_from(endian + "HHI", body)
            tsresol, tsoffset = 6, None
            opt = 8
            while opt + 4 <= len(body):
                code, length = struct.unpack_from(endian + "HH", body, opt)
                if code == 0:
                    break
                if code == 9:
                    tsresol = body[opt + 4]
                elif code == 14:
                    (tsoffset,) = struct.unpack_from(endian + "q", body, opt + 4)
                opt += 4 + ((length + 3) & ~3)
            interfaces.append(Interface(linktype, snaplen, tsresol, tsoffset))
        elif btype == EPB:
            iface, hi, lo, caplen, orig = struct.unpack_from(endian + "IIIII", body)
            ticks = hi << 32 | lo
            resol = interfaces[iface].tsresol
            ns = ticks * 10 ** (9 - resol) if resol <= 9 else ticks // 10 ** (resol - 9)
            packets.append(Packet(ns + (interfaces[iface].tsoffset or 0) * 10**9, body[20 : 20 + caplen], orig, iface))
        pos += total
    return Capture(packets, interfaces, "pcapng", True, endian == ">")


# -- writing --------------------------------------------------------------------------------


def write(capture: Capture) -> bytes:
    return write_pcapng(capture) if capture.container == "pcapng" else write_pcap(capture)


def write_pcap(capture: Capture, *, snaplen: int | None = None, linktype: int | None = None) -> bytes:
    e = ">" if capture.big_endian else "<"
    itf = capture.interfaces[0]
    out = [
        struct.pack(
            e + "IHHiIII",
            PCAP_MAGIC_NS if capture.nano else PCAP_MAGIC_US,
            2,
            4,
            0,
            0,
            itf.snaplen if snaplen is None else snaplen,
            itf.linktype if linktype is None else linktype,
        )
    ]
    for p in capture.packets:
        sec, ns = divmod(p.ts_ns, 10**9)
        frac = ns if capture.nano else ns // 1000
        out.append(struct.pack(e + "IIII", sec & 0xFFFFFFFF, frac & 0xFFFFFFFF, len(p.data), p.orig_len & 0xFFFFFFFF))
        out.append(p.data)
    return b"".join(out)


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def block(btype: int, body: bytes, endian: str = "<") -> bytes:
    body = _pad(body)
    total = len(body) + 12
    return struct.pack(endian + "II", btype, total) + body + struct.pack(endian + "I", total)


def option(code: int, value: bytes, endian: str = "<") -> bytes:
    return struct.pack(endian + "HH", code, len(value)) + _pad(value)


def shb(endian: str = "<") -> bytes:
    return block(SHB, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1), endian)


def idb(itf: Interface, endian: str = "<") -> bytes:
    opts = b""
    if itf.tsresol is not None:
        opts += option(9, bytes([itf.tsresol & 0xFF]), endian)
    if itf.tsoffset is not None:
        opts += option(14, struct.pack(endian + "q", itf.tsoffset), endian)
    if opts:
        opts += struct.pack(endian + "HH", 0, 0)
    return block(IDB, struct.pack(endian + "HHI", itf.linktype & 0xFFFF, 0, itf.snaplen & 0xFFFFFFFF) + opts, endian)


def ticks_of(ts_ns: int, itf: Interface) -> int:
    ns = ts_ns - (itf.tsoffset or 0) * 10**9
    resol = 6 if itf.tsresol is None else itf.tsresol
    if resol & 0x80:
        return (ns << (resol & 0x7F)) // 10**9
    return ns // 10 ** (9 - resol) if resol <= 9 else ns * 10 ** (resol - 9)


def epb(p: Packet, itf: Interface, endian: str = "<") -> bytes:
    ticks = ticks_of(p.ts_ns, itf) & 0xFFFFFFFFFFFFFFFF
    return block(
        EPB,
        struct.pack(endian + "IIIII", p.iface, ticks >> 32, ticks & 0xFFFFFFFF, len(p.data), p.orig_len & 0xFFFFFFFF)
        + p.data,
        endian,
    )


def write_pcapng(capture: Capture) -> bytes:
    e = ">" if capture.big_endian else "<"
    out = [shb(e)] + [idb(itf, e) for itf in capture.interfaces]
    out += [
        epb(p, capture.interfaces[p.iface] if p.iface < len(capture.interfaces) else capture.interfaces[0], e)
        for p in capture.packets
    ]
    return b"".join(out)


# -- inside a packet --------------------------------------------------------------------------


@dataclass(frozen=True)
class TcpSpan:
    """Where the IP header, TCP header and TCP payload of one packet lie in its bytes."""

    ip: int
    tcp: int
    payload: int
    end: int
    version: int


def tcp_span(linktype: int, data: bytes) -> TcpSpan | None:
    """Locate IPv4/IPv6 + TCP in a packet of a link type the samples use, or None."""
    if linktype == ETHERNET:
        off, etype = 14, int.from_bytes(data[12:14], "big")
        while etype == 0x8100 and len(data) >= off + 4:
            etype, off = int.from_bytes(data[off + 2 : off + 4], "big"), off + 4
    elif linktype == SLL2:
        off, etype = 20, int.from_bytes(data[0:2], "big")
    elif linktype == SLL:
        off, etype = 16, int.from_bytes(data[14:16], "big")
    elif linktype in (RAW_IP, 228, 229, 12, 14):
        off, etype = 0, 0x0800 if data[:1] and data[0] >> 4 == 4 else 0x86DD
    else:
        return None
    if len(data) < off + 20:
        return None
    if etype == 0x0800 and data[off] >> 4 == 4:
        ihl = (data[off] & 0x0F) * 4
        if data[off + 9] != 6:
            return None
        end = off + int.from_bytes(data[off + 2 : off + 4], "big")
        tcp, version = off + ihl, 4
    elif etype == 0x86DD and data[off] >> 4 == 6 and len(data) >= off + 40:
        if data[off + 6] != 6:
            return None
        end = off + 40 + int.from_bytes(data[off + 4 : off + 6], "big")
        tcp, version = off + 40, 6
    else:
        return None
    if len(data) < tcp + 20:
        return None
    payload = tcp + (data[tcp + 12] >> 4) * 4
    return TcpSpan(off, tcp, payload, min(end, len(data)), version)


def set_ip_length(data: bytearray, span: TcpSpan, payload_len: int) -> None:
    """Rewrite the IP length field for a TCP payload of ``payload_len`` bytes."""
    if span.version == 4:
        data[span.ip + 2 : span.ip + 4] = (span.payload - span.ip + payload_len).to_bytes(2, "big")
    else:
        data[span.ip + 4 : span.ip + 6] = (span.payload - span.tcp + payload_len).to_bytes(2, "big")


def with_payload(linktype: int, packet: Packet, payload: bytes, seq_delta: int = 0) -> Packet:
    """The packet with its TCP payload replaced (lengths fixed, seq moved by ``seq_delta``)."""
    span = tcp_span(linktype, packet.data)
    if span is None:
        return packet
    data = bytearray(packet.data[: span.payload]) + payload
    set_ip_length(data, span, len(payload))
    seq = (int.from_bytes(data[span.tcp + 4 : span.tcp + 8], "big") + seq_delta) % 2**32
    data[span.tcp + 4 : span.tcp + 8] = seq.to_bytes(4, "big")
    return replace(packet, data=bytes(data), orig_len=len(data))


def flow_of(linktype: int, data: bytes) -> tuple | None:
    """(src ip bytes, src port, dst ip bytes, dst port, seq, flags) of a TCP packet, or None."""
    span = tcp_span(linktype, data)
    if span is None:
        return None
    if span.version == 4:
        src, dst = data[span.ip + 12 : span.ip + 16], data[span.ip + 16 : span.ip + 20]
    else:
        src, dst = data[span.ip + 8 : span.ip + 24], data[span.ip + 24 : span.ip + 40]
    t = span.tcp
    sport, dport, seq = struct.unpack_from("!HHI", data, t)
    flags = int.from_bytes(data[t + 12 : t + 14], "big") & 0x1FF
    return src, sport, dst, dport, seq, flags
