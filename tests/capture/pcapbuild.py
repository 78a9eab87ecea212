"""Test helper: build frames and whole pcap / pcapng captures in memory.

Owns only the writing side the tests need (no checksums: neither our reader nor tshark's default
dissection checks them). Packets are given as (timestamp, frame) or (timestamp, frame, orig_len)
tuples; orig_len larger than the frame simulates a snaplen cut.
"""

from __future__ import annotations

import gzip
import ipaddress
import struct
import zlib
from collections.abc import Sequence

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def tcp(
    sport: int, dport: int, seq: int, ack: int = 0, flags: int = ACK, payload: bytes = b"", options: bytes = b""
) -> bytes:
    assert len(options) % 4 == 0
    doff = (20 + len(options)) // 4
    return (
        struct.pack("!HHIIHHHH", sport, dport, seq % 2**32, ack % 2**32, doff << 12 | flags, 65535, 0, 0)
        + options
        + payload
    )


def ipv4(
    src: str,
    dst: str,
    payload: bytes,
    proto: int = 6,
    ident: int = 0,
    frag: int = 0,
    options: bytes = b"",
    total: int | None = None,
) -> bytes:
    assert len(options) % 4 == 0
    ihl = 5 + len(options) // 4
    length = ihl * 4 + len(payload) if total is None else total
    return (
        struct.pack(
            "!BBHHHBBH4s4s",
            0x40 | ihl,
            0,
            length,
            ident,
            frag,
            64,
            proto,
            0,
            ipaddress.IPv4Address(src).packed,
            ipaddress.IPv4Address(dst).packed,
        )
        + options
        + payload
    )


def ipv4_fragments(src: str, dst: str, payload: bytes, ident: int, size: int, proto: int = 6) -> list[bytes]:
    """Split `payload` into fragments of `size` bytes (a multiple of 8), in order."""
    assert size % 8 == 0
    out = []
    for off in range(0, len(payload), size):
        more = off + size < len(payload)
        out.append(ipv4(src, dst, payload[off : off + size], proto, ident, (0x2000 if more else 0) | off // 8))
    return out


def ipv6(src: str, dst: str, payload: bytes, nh: int = 6, ext: Sequence[tuple[int, bytes]] = ()) -> bytes:
    """`ext` lists (header type, body) in order; bodies are padded to the header's unit size."""
    chain = b""
    types = [t for t, _ in ext] + [nh]
    for i, (t, body) in enumerate(ext):
        nxt = types[i + 1]
        if t == 44:
            chain += bytes([nxt, 0]) + body
        elif t == 51:
            body = body + b"\0" * (-(len(body) + 2) % 4)
            chain += bytes([nxt, (len(body) + 2) // 4 - 2]) + body
        else:
            body = body + b"\0" * (-(len(body) + 2) % 8)
            chain += bytes([nxt, (len(body) + 2) // 8 - 1]) + body
    first = types[0]
    return (
        struct.pack(
            "!IHBB16s16s",
            6 << 28,
            len(chain) + len(payload),
            first,
            64,
            ipaddress.IPv6Address(src).packed,
            ipaddress.IPv6Address(dst).packed,
        )
        + chain
        + payload
    )


def ipv6_fragments(src: str, dst: str, payload: bytes, ident: int, size: int, nh: int = 6) -> list[bytes]:
    assert size % 8 == 0
    out = []
    for off in range(0, len(payload), size):
        more = off + size < len(payload)
        body = struct.pack("!HI", off | (1 if more else 0), ident)
        out.append(ipv6(src, dst, payload[off : off + size], nh, [(44, body)]))
    return out


def ether(payload: bytes, ethertype: int = 0x0800, vlans: tuple[tuple[int, int], ...] = ()) -> bytes:
    """`vlans` lists (tag protocol id, vlan id) outermost first, e.g. ((0x88A8, 10), (0x8100, 20))."""
    tags = b"".join(struct.pack("!HH", tpid, vid) for tpid, vid in vlans)
    frame = b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02"
    if vlans:
        frame += struct.pack("!H", vlans[0][0]) + tags[2:] + struct.pack("!H", ethertype)
    else:
        frame += struct.pack("!H", ethertype)
    return frame + payload


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def vxlan(frame: bytes, vni: int = 1, port: int = 4789, flags: int = 0x08) -> bytes:
    """A UDP datagram carrying Ethernet ``frame`` in VXLAN (the I flag set: a VNI follows)."""
    return udp(49152 + vni, port, bytes((flags, 0, 0, 0)) + struct.pack("!I", vni << 8) + frame)


def geneve(packet: bytes, protocol: int = 0x6558, options: bytes = b"", version: int = 0) -> bytes:
    """A UDP datagram carrying ``packet`` (Ethernet, or IP by ``protocol``) in Geneve."""
    assert len(options) % 4 == 0
    head = struct.pack("!BBHI", version << 6 | len(options) // 4, 0, protocol, 1 << 8)
    return udp(49152, 6081, head + options + packet)


def gre(
    packet: bytes, protocol: int = 0x0800, checksum: bool = False, key: int | None = None, seq: int | None = None
) -> bytes:
    """A GRE (version 0) header with the optional fields asked for, then ``packet``."""
    flags = (0x8000 if checksum else 0) | (0x2000 if key is not None else 0) | (0x1000 if seq is not None else 0)
    head = struct.pack("!HH", flags, protocol)
    head += b"\0\0\0\0" if checksum else b""
    head += struct.pack("!I", key) if key is not None else b""
    head += struct.pack("!I", seq) if seq is not None else b""
    return head + packet


def erspan(frame: bytes, version: int, seq: int = 1, subheader: bool = False) -> bytes:
    """GRE carrying Ethernet ``frame`` in ERSPAN type ``version`` (1: no header of its own; 2: an
    8-byte header; 3: a 12-byte one, and an 8-byte platform subheader if asked)."""
    if version == 1:
        return gre(frame, 0x88BE)
    if version == 2:
        return gre(struct.pack("!HHI", 1 << 12 | 10, 7, 0) + frame, 0x88BE, seq=seq)
    head = struct.pack("!HHIHBB", 2 << 12 | 10, 7, 123456, 0, 0, 1 if subheader else 0)
    return gre(head + (bytes(8) if subheader else b"") + frame, 0x22EB, seq=seq)


def sll(payload: bytes, ethertype: int = 0x0800) -> bytes:
    return struct.pack("!HHH8sH", 0, 1, 6, b"\x02\0\0\0\0\x01\0\0", ethertype) + payload


def sll2(payload: bytes, ethertype: int = 0x0800) -> bytes:
    return struct.pack("!HHIHBB8s", ethertype, 0, 3, 1, 0, 6, b"\x02\0\0\0\0\x01\0\0") + payload


def null(payload: bytes, family: int = 2, order: str = "<") -> bytes:
    return struct.pack(order + "I", family) + payload


def pcap(packets, linktype: int = 1, nanos: bool = False, big_endian: bool = False, snaplen: int = 262144) -> bytes:
    e = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    div = 1 if nanos else 1000
    for p in packets:
        ts, frame = p[0], p[1]
        orig = p[2] if len(p) > 2 else len(frame)
        out.append(struct.pack(e + "IIII", ts // 10**9, (ts % 10**9) // div, len(frame), orig) + frame)
    return b"".join(out)


def _block(e: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def _option(e: str, code: int, value: bytes) -> bytes:
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def pcapng(interfaces, packets, big_endian: bool = False, unknown_block: bool = True) -> bytes:
    """interfaces: (linktype, tsresol byte or None, tsoffset seconds or None, snaplen).
    packets: (kind, iface, ticks, frame[, orig_len]) with kind "epb", "spb" or "pb"."""
    e = ">" if big_endian else "<"
    out = [_block(e, 0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1) + _option(e, 0, b""))]
    for linktype, tsresol, tsoffset, snaplen in interfaces:
        opts = b""
        if tsresol is not None:
            opts += _option(e, 9, bytes([tsresol]))
        if tsoffset is not None:
            opts += _option(e, 14, struct.pack(e + "q", tsoffset))
        out.append(_block(e, 1, struct.pack(e + "HHI", linktype, 0, snaplen) + opts + _option(e, 0, b"")))
    if unknown_block:
        out.append(_block(e, 0x0BADBEEF, b"ignore me"))
    for p in packets:
        kind, iface, ticks, frame = p[:4]
        orig = p[4] if len(p) > 4 else len(frame)
        if kind == "epb":
            out.append(
                _block(e, 6, struct.pack(e + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), orig) + frame)
            )
        elif kind == "pb":
            out.append(
                _block(
                    e, 2, struct.pack(e + "HHIIII", iface, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), orig) + frame
                )
            )
        else:
            out.append(_block(e, 3, struct.pack(e + "I", orig) + frame))
    return b"".join(out)


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


def gz_corrupt_after(data: bytes, good: int) -> bytes:
    """A gzip member whose deflate stream holds the first `good` bytes of `data` and then turns
    invalid (a block of the reserved type 3), with no trailer: what a flipped bit does to a file."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(data[:good]) + deflate.flush(zlib.Z_FULL_FLUSH)
    return struct.pack("<BBBBIBB", 0x1F, 0x8B, 8, 0, 0, 0, 255) + body + b"\xff" * 16
