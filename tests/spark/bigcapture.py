"""Build a larger capture from a sample: the session repeated, each copy from a client address of its own.

Rewriting only the client's IPv4 address (10.x.y.z for copy n) keeps every copy a complete Kafka
session on 4-tuples of its own; copies follow one another in time. Used by the split test and by
benchmarks/bench_spark.py (the same idea as benchmarks/bench_capture.py's --samples).
"""

from __future__ import annotations

import struct
from pathlib import Path

_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")


def replicate(source: Path, target: Path, copies: int | None = None, size_bytes: int | None = None) -> int:
    """Write ``target``: the classic Ethernet pcap ``source`` repeated; returns the number of copies."""
    data = source.read_bytes()
    magic, _, _, _, _, _, link = _GLOBAL.unpack_from(data)
    assert magic == 0xA1B2C3D4 and link == 1, "a microsecond pcap of Ethernet frames"
    broker_port = _broker_port(data)
    packets, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, incl, _orig = _RECORD.unpack_from(data, pos)
        packets.append((sec * 10**6 + usec, bytes(data[pos + 16 : pos + 16 + incl])))
        pos += 16 + incl
    start, span = packets[0][0], packets[-1][0] - packets[0][0] + 1000
    n = 0
    written = 24
    with open(target, "wb") as out:
        out.write(data[:24])
        while (copies is not None and n < copies) or (size_bytes is not None and written < size_bytes):
            client_ip = bytes((10, n >> 16 & 255, n >> 8 & 255, n & 255))
            for t, frame in packets:
                f = with_client(frame, broker_port, client_ip)
                us = t - start + n * span + 1_700_000_000 * 10**6
                out.write(_RECORD.pack(us // 10**6, us % 10**6, len(f), len(f)))
                out.write(f)
                written += 16 + len(f)
            n += 1
    return n


def with_client(frame: bytes, broker_port: int, client_ip: bytes) -> bytes:
    """An Ethernet/IPv4/TCP frame with the client's address replaced (src towards the broker, else dst)."""
    f = bytearray(frame)
    if len(f) >= 38 and f[12:14] == b"\x08\x00" and f[23] == 6:
        tcp = 14 + (f[14] & 0xF) * 4
        to_broker = int.from_bytes(f[tcp + 2 : tcp + 4], "big") == broker_port
        client = 26 if to_broker else 30  # IPv4 source address towards the broker, destination back
        f[client : client + 4] = client_ip
    return bytes(f)


def _broker_port(data: bytes) -> int:
    """The port of the first SYN's destination: the sample sessions start with a client connecting."""
    pos = 24
    while pos + 16 <= len(data):
        incl = _RECORD.unpack_from(data, pos)[2]
        f = data[pos + 16 : pos + 16 + incl]
        if len(f) >= 54 and f[12:14] == b"\x08\x00" and f[23] == 6:
            tcp = 14 + (f[14] & 0xF) * 4
            if f[tcp + 13] & 0x12 == 0x02:  # SYN without ACK
                return int.from_bytes(f[tcp + 2 : tcp + 4], "big")
        pos += 16 + incl
    raise ValueError("no SYN in the capture")
