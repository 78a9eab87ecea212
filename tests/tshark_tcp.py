"""Test helper: tshark's TCP facts per connection, the reference the connections view is checked against.

One tshark run per capture gives, per ``tcp.stream``: frames and ``tcp.len`` bytes per sending
endpoint, how many of its frames tshark flags ``tcp.analysis.retransmission`` (which includes fast
and spurious retransmissions), ``tcp.analysis.out_of_order`` and ``tcp.analysis.lost_segment``,
its FIN and RST frames, its ``tcp.analysis.initial_rtt``, first and last frame times, and
``-z conv,tcp``'s frame counts.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field

TSHARK = shutil.which("tshark")
_FIELDS = (
    "tcp.stream",
    "frame.time_epoch",
    "ip.src",
    "ipv6.src",
    "tcp.srcport",
    "ip.dst",
    "ipv6.dst",
    "tcp.dstport",
    "tcp.len",
    "tcp.analysis.retransmission",
    "tcp.analysis.out_of_order",
    "tcp.analysis.lost_segment",
    "tcp.analysis.initial_rtt",
    "tcp.flags.fin",
    "tcp.flags.reset",
)


@dataclass
class SideFacts:
    frames: int = 0
    bytes: int = 0
    retransmissions: int = 0
    out_of_order: int = 0
    lost_segments: int = 0
    fins: int = 0
    resets: int = 0


@dataclass
class StreamFacts:
    stream: int
    first_ns: int = 0
    last_ns: int = 0
    initial_rtt_ns: int | None = None
    sides: dict[str, SideFacts] = field(default_factory=lambda: defaultdict(SideFacts))  # by "ip:port" sender


def _endpoint(ip: str, port: str) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _ns(epoch: str) -> int:
    seconds, _, fraction = epoch.partition(".")
    return int(seconds) * 10**9 + int((fraction + "000000000")[:9])


@functools.cache
def tcp_facts(path: str) -> tuple[StreamFacts, ...]:
    """tshark's facts of every TCP connection in the capture at ``path``, in tcp.stream order."""
    cmd = [TSHARK, "-r", path, "-n", "-Y", "tcp", "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in _FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    streams: dict[int, StreamFacts] = {}
    for line in out.splitlines():
        (stream, epoch, src4, src6, sport, _dst4, _dst6, _dport, length, retrans, ooo, lost, irtt, fin, rst) = (
            line.split("\t")
        )
        facts = streams.setdefault(int(stream), StreamFacts(int(stream), first_ns=_ns(epoch)))
        facts.last_ns = _ns(epoch)
        if irtt and facts.initial_rtt_ns is None:
            facts.initial_rtt_ns = _ns(irtt)
        side = facts.sides[_endpoint(src4 or src6, sport)]
        side.frames += 1
        side.bytes += int(length or 0)
        side.retransmissions += bool(retrans)
        side.out_of_order += bool(ooo)
        side.lost_segments += bool(lost)
        side.fins += fin in ("1", "True")
        side.resets += rst in ("1", "True")
    return tuple(streams[k] for k in sorted(streams))


_CONV = re.compile(r"^(\S+)\s+<->\s+(\S+)\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(\d+)")


@functools.cache
def conversations(path: str) -> tuple[tuple[str, str, int, int], ...]:
    """``-z conv,tcp``: (A, B, frames B -> A, frames A -> B) per conversation, as tshark lists them."""
    out = subprocess.run(
        [TSHARK, "-r", path, "-n", "-q", "-z", "conv,tcp"], check=True, capture_output=True, text=True
    ).stdout
    rows = []
    for line in out.splitlines():
        m = _CONV.match(line)
        if m:
            rows.append((m[1], m[2], int(m[3]), int(m[4])))
    return tuple(rows)
