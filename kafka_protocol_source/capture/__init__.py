"""Capture stage: pcap / pcapng files (optionally gzipped) in, TCP segments out.

Public surface::

    read_packets(source, *, fragment_timeout_s=30.0, max_open_fragments=1024)
        -> Iterator[TcpSegment | CaptureIssue]
    detect_format(source) -> CaptureFormat          # by magic bytes, never by file name
    CaptureError                                    # only for input that is not a capture at all

`source` is a path or a binary file object; it is read chunk by chunk, never whole. Link layers:
Ethernet (802.1Q / QinQ), Linux SLL and SLL2, BSD NULL / LOOP, raw IPv4/IPv6. IPv4 options and
fragments, IPv6 extension headers and fragments, and tunnels (VXLAN, Geneve, GRE, ERSPAN, IP in
IP: `tunnels`) are handled here. Knows nothing about streams (see `kafka_protocol_source.tcp`) or
Kafka.
"""

from .model import ACK, FIN, PSH, RST, SYN, CaptureError, CaptureFormat, CaptureIssue, TcpSegment, packet_number
from .reader import read_packets
from .source import detect_format

__all__ = [
    "ACK",
    "FIN",
    "PSH",
    "RST",
    "SYN",
    "CaptureError",
    "CaptureFormat",
    "CaptureIssue",
    "TcpSegment",
    "detect_format",
    "packet_number",
    "read_packets",
]
