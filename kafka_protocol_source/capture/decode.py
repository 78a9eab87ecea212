"""From one captured frame to one TCP segment: link layer, IPv4/IPv6, TCP header.

Owns: the link types we understand (Ethernet with 802.1Q/802.1ad tags, Linux SLL and SLL2,
BSD NULL and LOOP, raw IP in its 101/12/14/228/229 spellings), IPv4 options, IPv6 extension
headers (hop-by-hop, routing, destination options, fragment, AH), handing fragments to
`fragments`, and measuring what the snaplen cut off. A tunnel's packet (`tunnels` says where it
starts) is read as a captured frame of its own, up to `MAX_TUNNEL_DEPTH` tunnels deep. Non-IP
and non-TCP packets are skipped quietly; broken headers become `CaptureIssue`s. Does not own
streams or anything above TCP.

Written with precompiled `struct` over memoryviews: one bytes copy per packet (the payload).
"""

from __future__ import annotations

import socket
import struct

from .fragments import FragmentReassembler
from .model import CaptureIssue, TcpSegment
from .tunnels import FRAGMENTED_TUNNELS, TUNNEL_CUT, TUNNEL_PROTOCOLS, inner_packet

_IPV4 = struct.Struct("!BxHHHxB2x4s4s").unpack_from  # ver/ihl, total, id, frag, proto, src, dst
_IPV6 = struct.Struct("!4xHB1x16s16s").unpack_from  # payload length, next header, src, dst
_TCP = struct.Struct("!HHIIH").unpack_from  # ports, seq, ack, data offset + flags
# From the ethertype to the TCP flags, for a 20-byte IPv4 header (decode's fast path): ethertype,
# version/IHL, total length, fragment field, protocol, addresses, ports, seq, ack, offset + flags
_ETH_IPV4_TCP = struct.Struct("!HBxH2xHxB2x4s4sHHIIH").unpack_from
_FRAG6 = struct.Struct("!BxHI").unpack_from  # next header, offset + M, id
_U32_LE = struct.Struct("<I").unpack_from
_new_tuple = tuple.__new__

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276
RAW_IP_LINKTYPES = frozenset({101, 12, 14, 228, 229})

_VLAN_ETHERTYPES = frozenset({0x8100, 0x88A8, 0x9100})
_ETHERTYPE_VERSION = {0x0800: 4, 0x86DD: 6}
_MPLS_ETHERTYPES = frozenset({0x8847, 0x8848})
_PPPOE_SESSION = 0x8864
_PPP_VERSION = {0x0021: 4, 0x0057: 6}
# BSD address-family numbers for IPv6 differ by OS (Linux 10, NetBSD/OpenBSD 24, FreeBSD 28, macOS 30).
_AF_VERSION = {2: 4, 10: 6, 24: 6, 28: 6, 30: 6}
_IPV6_SKIPPABLE = frozenset({0, 43, 60})  # hop-by-hop, routing, destination options
_IPPROTO_TCP = 6
_IPV6_FRAGMENT = 44
_IPV6_AH = 51
_NAME_CACHE_LIMIT = 1 << 16
MAX_TUNNEL_DEPTH = 4  # tunnels inside tunnels (a VXLAN mirror of GRE traffic, say) read this deep


def _link_header(linktype: int, data, size: int) -> tuple[int, int | None] | str | None:
    """Header length and IP version for link types other than Ethernet; the header's name when the
    packet is too short for it; None for a link type we do not read."""
    if linktype == LINKTYPE_LINUX_SLL2:
        if size < 20:
            return "SLL2 header"
        return _ip_after(data, 20, (data[0] << 8) | data[1], size)
    if linktype == LINKTYPE_LINUX_SLL:
        if size < 16:
            return "SLL header"
        return _ip_after(data, 16, (data[14] << 8) | data[15], size)
    if linktype in RAW_IP_LINKTYPES:
        if size < 1:
            return "IP header"
        return 0, data[0] >> 4
    if linktype == LINKTYPE_NULL or linktype == LINKTYPE_LOOP:
        if size < 4:
            return "loopback header"
        family = _U32_LE(data, 0)[0]
        # NULL stores the family in the capturing host's byte order, LOOP in network order:
        # a value with high bits set is the other order.
        if family > 0xFFFF or linktype == LINKTYPE_LOOP:
            family = int.from_bytes(data[0:4], "big")
        return 4, _AF_VERSION.get(family)
    return None


def _ip_after(data, off: int, ethertype: int, size: int) -> tuple[int, int | None] | str:
    """Where the IP header starts and its version, after an ethertype field ending at ``off``
    and the VLAN tags (802.1Q, QinQ) that may follow it: on Ethernet, and on Linux cooked headers, where
    libpcap puts back the tag a NIC stripped (``-i any`` on a bridge or trunk). Past an MPLS
    label stack or a PPPoE session header too, as a mirror port of a provider's or a DSL link
    gives them."""
    while ethertype in _VLAN_ETHERTYPES:
        if size < off + 4:
            return "VLAN tag"
        ethertype = (data[off + 2] << 8) | data[off + 3]
        off += 4
    if ethertype in _MPLS_ETHERTYPES:
        while True:  # label stack entries, to the one with the bottom-of-stack bit
            if size < off + 5:
                return "MPLS label"
            off += 4
            if data[off - 2] & 1:
                return _under_mpls(data, off, size)
    if ethertype == _PPPOE_SESSION:
        if size < off + 8:
            return "PPPoE header"
        return off + 8, _PPP_VERSION.get((data[off + 6] << 8) | data[off + 7])
    return off, _ETHERTYPE_VERSION.get(ethertype)


def _under_mpls(data, off: int, size: int) -> tuple[int, int | None] | str:
    """What the bottom MPLS label carries: IP, or Ethernet (a pseudowire, with or without its
    control word, whose first nibble is 0). Nothing says which: an IPv4 header has a length of
    at least 5 words, and Ethernet under a destination MAC that reads as IP has an IP or VLAN
    ethertype 12 bytes on (GCP's MACs begin 42:01)."""
    version = data[off] >> 4
    if version == 0:
        off += 4  # the control word
    elif version == 4 and data[off] & 0x0F >= 5:
        return off, 4
    if size >= off + 14:
        ether = (data[off + 12] << 8) | data[off + 13]
        if ether in _ETHERTYPE_VERSION or ether in _VLAN_ETHERTYPES:
            return _ip_after(data, off + 14, ether, size)
    return off, 6 if version == 6 else None


class PacketDecoder:
    """Decodes frames one at a time; keeps only an address-name cache and the fragment state."""

    def __init__(self, fragments: FragmentReassembler) -> None:
        self._frag = fragments
        self._names: dict[bytes, str] = {}
        self._reported_linktypes: set[int] = set()
        self._depth = 0  # tunnels the packet being read is inside

    def decode(self, index: int, offset: int, ts: int, linktype: int, data, orig_len: int):
        """Return a TcpSegment, a CaptureIssue, or None for a packet that is not TCP."""
        size = len(data)
        if linktype == LINKTYPE_ETHERNET and size >= 54:
            # The usual packet, read with one unpack: Ethernet, IPv4 without options, not a
            # fragment, all its bytes captured, and a whole TCP header. Anything else (and any
            # doubt) takes the general path below, which gives the same segment for this one.
            etype, ver_ihl, total, frag, proto, src, dst, sport, dport, seq, ack, off_flags = _ETH_IPV4_TCP(data, 12)
            if (
                etype == 0x0800
                and ver_ihl == 0x45
                and proto == _IPPROTO_TCP
                and not frag & 0x3FFF
                and 40 <= total <= size - 14
            ):
                end = 14 + total
                start = 34 + (off_flags >> 12) * 4
                if start >= 54 and start <= end:
                    names = self._names
                    return _new_tuple(  # TcpSegment(...) without the Python-level __new__ it adds
                        TcpSegment,
                        (
                            ts,
                            names.get(src) or self._name(src),
                            sport,
                            names.get(dst) or self._name(dst),
                            dport,
                            seq,
                            ack,
                            off_flags & 0x1FF,
                            bytes(data[start:end]) if start < end else b"",  # (no copy for an ACK)
                            0,
                            index,
                            offset,
                        ),
                    )
        header: tuple[int, int | None] | str | None
        if linktype == LINKTYPE_ETHERNET:
            header = "Ethernet header" if size < 14 else _ip_after(data, 14, (data[12] << 8) | data[13], size)
        else:
            header = _link_header(linktype, data, size)
        if header is None:
            return self._unsupported(index, offset, linktype)
        if isinstance(header, str):
            return self._short(index, offset, size, orig_len, header)
        off, version = header
        if version == 4:
            return self._ipv4(data, off, size, orig_len, index, offset, ts)
        if version == 6:
            return self._ipv6(data, off, size, orig_len, index, offset, ts)
        return None

    def _unsupported(self, index: int, offset: int, linktype: int) -> CaptureIssue | None:
        """One issue per link type we cannot read; its packets are skipped."""
        if linktype in self._reported_linktypes:
            return None
        self._reported_linktypes.add(linktype)
        return CaptureIssue(index, offset, "unsupported_linktype", f"link type {linktype}: its packets are skipped")

    @staticmethod
    def _short(index: int, offset: int, size: int, orig_len: int, what: str):
        if orig_len > size:
            return CaptureIssue(index, offset, "snaplen_cut", f"{what} cut: {size} of {orig_len} bytes captured")
        return None

    def _bad(self, kind: str, index: int, offset: int, size: int, orig_len: int, detail: str) -> CaptureIssue:
        if orig_len > size:
            return CaptureIssue(index, offset, "snaplen_cut", f"{detail}: {size} of {orig_len} bytes captured")
        return CaptureIssue(index, offset, kind, detail)

    def _ipv4(self, data, off, size, orig_len, index, offset, ts):
        avail = size - off
        if avail < 20:
            return self._bad("bad_ip_header", index, offset, size, orig_len, "IPv4 header shorter than 20 bytes")
        ver_ihl, total, ident, frag, proto, src, dst = _IPV4(data, off)
        ihl = (ver_ihl & 0x0F) * 4
        if ver_ihl >> 4 != 4 or ihl < 20:
            return CaptureIssue(index, offset, "bad_ip_header", f"IPv4 version/IHL byte {ver_ihl:#04x}")
        if total == 0:  # segmentation offload: the NIC fills the length in later; the packet's
            total = max(orig_len, size) - off  # own length says it, snaplen-cut or not
        elif total < ihl:
            return CaptureIssue(index, offset, "bad_ip_header", f"IPv4 total length {total} below header length {ihl}")
        if total <= avail:
            end, missing = off + total, 0  # anything after `total` is link-layer padding or FCS
        else:
            end, missing = size, total - avail
        if off + ihl > end:
            return self._bad("bad_ip_header", index, offset, size, orig_len, "IPv4 options cut")
        if frag & 0x3FFF:
            if proto != _IPPROTO_TCP and proto not in FRAGMENTED_TUNNELS:
                return None
            key = (4, src, dst, ident, proto)
            if missing:
                self._frag.poison(key, ts, index, offset)
                return CaptureIssue(
                    index, offset, "fragment_truncated", f"IPv4 fragment of datagram {ident:#x} cut by {missing} bytes"
                )
            done = self._frag.add(
                key, (frag & 0x1FFF) * 8, bool(frag & 0x2000), bytes(data[off + ihl : end]), proto, ts, index, offset
            )
            if done is None:
                return None
            payload = done[0]
            n = len(payload)
            if proto != _IPPROTO_TCP:
                return self._tunneled(proto, payload, 0, n, 0, n, n, index, offset, ts)
            return self._tcp(src, dst, payload, 0, n, 0, n, n, index, offset, ts)
        if proto != _IPPROTO_TCP:
            return self._tunneled(proto, data, off + ihl, end, missing, size, orig_len, index, offset, ts)
        return self._tcp(src, dst, data, off + ihl, end, missing, size, orig_len, index, offset, ts)

    def _ipv6(self, data, off, size, orig_len, index, offset, ts):
        if size - off < 40:
            return self._bad("bad_ip_header", index, offset, size, orig_len, "IPv6 header shorter than 40 bytes")
        plen, nh, src, dst = _IPV6(data, off)
        start = off + 40
        avail = size - start
        if plen == 0:
            plen = max(orig_len, size) - start  # jumbogram or segmentation offload: the packet's own length
        if plen <= avail:
            end, missing = start + plen, 0
        else:
            end, missing = size, plen - avail
        return self._ipv6_upper(src, dst, data, start, end, nh, missing, size, orig_len, index, offset, ts, True)

    def _ipv6_upper(self, src, dst, data, pos, end, nh, missing, size, orig_len, index, offset, ts, may_fragment):
        while True:
            if nh == _IPPROTO_TCP:
                return self._tcp(src, dst, data, pos, end, missing, size, orig_len, index, offset, ts)
            if nh in _IPV6_SKIPPABLE or nh == _IPV6_AH:
                if pos + 8 > end:
                    return self._bad("bad_ip_header", index, offset, size, orig_len, f"IPv6 extension header {nh} cut")
                hlen = (data[pos + 1] + 2) * 4 if nh == _IPV6_AH else (data[pos + 1] + 1) * 8
                nh = data[pos]
                pos += hlen
                continue
            if nh == _IPV6_FRAGMENT and may_fragment:
                if pos + 8 > end:
                    return self._bad("bad_ip_header", index, offset, size, orig_len, "IPv6 fragment header cut")
                nxt, off_m, ident = _FRAG6(data, pos)
                pos += 8
                if off_m & 0xFFF9 == 0:  # an atomic fragment: offset 0 and no more to come
                    nh = nxt
                    continue
                key = (6, src, dst, ident)
                if missing:
                    self._frag.poison(key, ts, index, offset)
                    return CaptureIssue(
                        index,
                        offset,
                        "fragment_truncated",
                        f"IPv6 fragment of datagram {ident:#x} cut by {missing} bytes",
                    )
                done = self._frag.add(
                    key, off_m & 0xFFF8, bool(off_m & 1), bytes(data[pos:end]), nxt, ts, index, offset
                )
                if done is None:
                    return None
                payload, first_nh = done
                n = len(payload)
                return self._ipv6_upper(src, dst, payload, 0, n, first_nh, 0, n, n, index, offset, ts, False)
            return self._tunneled(nh, data, pos, end, missing, size, orig_len, index, offset, ts)

    def _tunneled(self, proto, data, pos, end, missing, size, orig_len, index, offset, ts):
        """The segment in the packet a tunnel carries in ``data[pos:end]`` (IP protocol ``proto``),
        read as a frame captured on its own; None when it is not a tunnel we read."""
        if proto not in TUNNEL_PROTOCOLS or self._depth >= MAX_TUNNEL_DEPTH:
            return None
        inner = inner_packet(proto, data, pos, end)
        if inner is None:
            return None
        if inner is TUNNEL_CUT:
            return self._short(index, offset, size, orig_len, "tunnel header")
        linktype, start = inner
        self._depth += 1
        try:
            # what the capture lacks of the tunnel's packet is what it lacks of the inner one
            return self.decode(index, offset, ts, linktype, memoryview(data)[start:end], end - start + missing)
        finally:
            self._depth -= 1

    def _name(self, raw: bytes) -> str:
        names = self._names
        if len(names) >= _NAME_CACHE_LIMIT:
            names.clear()
        name = names[raw] = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)
        return name

    def _tcp(self, src, dst, data, pos, end, missing, size, orig_len, index, offset, ts):
        if end - pos < 20:
            return self._bad("bad_tcp_header", index, offset, size, orig_len, "TCP header shorter than 20 bytes")
        sport, dport, seq, ack, off_flags = _TCP(data, pos)
        doff = (off_flags >> 12) * 4
        if doff < 20:
            return CaptureIssue(index, offset, "bad_tcp_header", f"TCP data offset {doff}")
        payload = b""
        if pos + doff <= end:
            payload = bytes(data[pos + doff : end])
        elif missing and end - pos + missing >= doff:  # the snaplen cut the options: the ports, sequence
            missing = end - pos + missing - doff  # numbers and flags are there, the payload is all missing
        else:
            return self._bad("bad_tcp_header", index, offset, size, orig_len, "TCP options cut")
        names = self._names
        s = names.get(src) or self._name(src)
        d = names.get(dst) or self._name(dst)
        return TcpSegment(ts, s, sport, d, dport, seq, ack, off_flags & 0x1FF, payload, missing, index, offset)
