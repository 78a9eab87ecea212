"""Tunnels: where the packet a tunnel carries starts, and what it is.

A capture of mirrored or overlay traffic holds Kafka's TCP segments inside another packet: AWS
Traffic Mirroring and Azure's virtual TAP send copies in VXLAN, Kubernetes overlays (Flannel,
Cilium, Calico) carry pods' traffic in VXLAN or Geneve on the nodes' interfaces, AWS Gateway Load
Balancer in Geneve, switches' SPAN sessions in GRE as ERSPAN, and VPNs and hosts in plain GRE or
IP in IP. Read as it is, such a capture has no TCP at all.

Owns: recognising those headers (VXLAN on UDP 4789 and 8472, the Linux default Flannel and
Cilium use; Geneve on UDP 6081; GRE version 0, bare or carrying Ethernet, IP or ERSPAN types I,
II and III; IP in IP) and saying where the inner packet starts and which link type reads it.
UDP is told apart by its destination port alone, as tshark does; a header that does not fit
what its port or protocol says is not a tunnel, and one that ends before its packet starts is
``TUNNEL_CUT`` (the decoder reports it if the snaplen cut it). Does not own reading the inner
packet (the packet decoder does, as it reads any captured frame).
"""

from __future__ import annotations

import struct

ETHERNET = 1  # the inner packet's link type, as a capture file numbers them
RAW_IP = 101

IPPROTO_IPIP, IPPROTO_UDP, IPPROTO_IPV6, IPPROTO_GRE = 4, 17, 41, 47
TUNNEL_PROTOCOLS = frozenset({IPPROTO_IPIP, IPPROTO_UDP, IPPROTO_IPV6, IPPROTO_GRE})
# Tunnels whose IPv4 datagrams are worth reassembling: GRE and IP in IP are fragmented after
# encapsulation, while VXLAN and Geneve endpoints must not fragment (RFC 7348, RFC 8926), and
# holding every fragmented UDP datagram (DNS, NFS) would only report their lost pieces.
FRAGMENTED_TUNNELS = frozenset({IPPROTO_IPIP, IPPROTO_IPV6, IPPROTO_GRE})
VXLAN_PORTS = frozenset({4789, 8472})
GENEVE_PORT = 6081

TUNNEL_CUT = (-1, -1)  # a tunnel's header, cut before the packet it carries

_ETHERTYPE_LINK = {0x6558: ETHERNET, 0x0800: RAW_IP, 0x86DD: RAW_IP}  # transparent bridging, IPv4, IPv6
_ERSPAN_II, _ERSPAN_III = 0x88BE, 0x22EB
_U16 = struct.Struct("!H").unpack_from
_GRE = struct.Struct("!HH").unpack_from  # flags and version, protocol type


def inner_packet(protocol: int, data, pos: int, end: int) -> tuple[int, int] | None:
    """For an IP payload of ``protocol`` in ``data[pos:end]``: (link type, start) of the packet
    it carries, ``TUNNEL_CUT``, or None when it carries none we read."""
    if protocol == IPPROTO_UDP:
        if end - pos < 4:
            return None
        port = _U16(data, pos + 2)[0]
        if port in VXLAN_PORTS:
            if end - pos < 16:
                return TUNNEL_CUT
            return (ETHERNET, pos + 16) if data[pos + 8] & 0x08 else None  # the I flag: a VNI follows
        if port == GENEVE_PORT:
            return _geneve(data, pos + 8, end) if end - pos >= 16 else TUNNEL_CUT
        return None
    if protocol == IPPROTO_GRE:
        return _gre(data, pos, end)
    if protocol == IPPROTO_IPIP or protocol == IPPROTO_IPV6:
        return RAW_IP, pos
    return None


def _geneve(data, pos: int, end: int) -> tuple[int, int] | None:
    head = data[pos]
    if head >> 6:  # version 0 is the only one
        return None
    start = pos + 8 + (head & 0x3F) * 4  # the options' length is in 4-byte words
    link = _ETHERTYPE_LINK.get(_U16(data, pos + 2)[0])
    if link is None:
        return None
    return (link, start) if start <= end else TUNNEL_CUT


def _gre(data, pos: int, end: int) -> tuple[int, int] | None:
    if end - pos < 4:
        return TUNNEL_CUT
    flags, ethertype = _GRE(data, pos)
    if flags & 0x4007:  # a source route (obsolete), or a version other than 0 (1 is PPTP's)
        return None
    sequenced = flags & 0x1000
    start = pos + 4 + (4 if flags & 0x8000 else 0) + (4 if flags & 0x2000 else 0) + (4 if sequenced else 0)
    if ethertype == _ERSPAN_II:
        # Type I has no header of its own (and no sequence number); type II an 8-byte one, whose
        # version nibble says 1.
        if sequenced:
            if start + 8 > end:
                return TUNNEL_CUT
            if data[start] >> 4 != 1:
                return None
            start += 8
        link = ETHERNET
    elif ethertype == _ERSPAN_III:
        # A 12-byte header, then an 8-byte platform subheader where its last bit (O) says so;
        # frame type 0 is Ethernet (the only one switches send).
        if start + 12 > end:
            return TUNNEL_CUT
        if data[start] >> 4 != 2 or (data[start + 10] >> 2) & 0x1F:
            return None
        start += 20 if data[start + 11] & 1 else 12
        link = ETHERNET
    else:
        found = _ETHERTYPE_LINK.get(ethertype)
        if found is None:
            return None
        link = found
    return (link, start) if start <= end else TUNNEL_CUT
