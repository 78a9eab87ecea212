"""Benchmark the capture and tcp stages against tshark on one large capture.

Builds (once, in /tmp) a ~100 MB pcap by replicating crafted Kafka-sized packets (or the packets
of --seed CAPTURE) over many connections with shifted ports and timestamps, then times
read_packets, read_packets + reassemble, and tshark on the same file, printing packets/s, MB/s
and the ratio to tshark. Later stages add a row by appending to STAGES (a name and a function
from the capture path to a packet count).

    python benchmarks/bench_capture.py [--size-mb 100] [--seed sample.pcap] [--rebuild]
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "capture"))

from kafka_protocol_source.capture import TcpSegment, read_packets  # noqa: E402
from kafka_protocol_source.tcp import reassemble  # noqa: E402


def _crafted_frames() -> list[bytes]:
    import pcapbuild as b

    # Kafka-like mix: small requests, full-MSS fetch responses, pure ACKs.
    sizes = [60, 200, 1448, 1448, 1448, 0, 512]
    return [b.ether(b.ipv4("10.0.0.1", "10.1.0.1", b.tcp(40000, 9092, 0, flags=0x18 if n else 0x10, payload=b"k" * n)))
            for n in sizes]


def build_capture(path: Path, size_mb: int, seed: Path | None) -> None:
    """Write `path`: the seed frames repeated over 50 connections with advancing seq and time."""
    if seed is not None:
        from kafka_protocol_source.capture.pcap import read_pcap_frames
        from kafka_protocol_source.capture.source import open_capture

        with open_capture(seed) as (read, fmt, head):
            if fmt.container != "pcap":
                raise SystemExit("--seed must be a classic pcap with Ethernet frames")
            frames = [bytes(f[4]) for f in read_pcap_frames(read, head) if isinstance(f, tuple)]
    else:
        frames = _crafted_frames()
    target = size_mb * 2**20
    rec = struct.Struct("<IIII")
    seqs = [0] * 50
    written = 0
    ts = 1_700_000_000 * 10**6
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        i = 0
        while written < target:
            frame = bytearray(frames[i % len(frames)])
            conn = i % 50
            if len(frame) >= 54 and frame[12:14] == b"\x08\x00" and frame[23] == 6:
                ihl = (frame[14] & 0xF) * 4
                tcp = 14 + ihl
                struct.pack_into("!H", frame, tcp, 20000 + conn)  # shift the source port per connection
                struct.pack_into("!I", frame, tcp + 4, seqs[conn] & 0xFFFFFFFF)
                seqs[conn] += int.from_bytes(frame[14 + 2 : 14 + 4], "big") - ihl - (frame[tcp + 12] >> 4) * 4
            ts += 10
            out.write(rec.pack(ts // 10**6, ts % 10**6, len(frame), len(frame)))
            out.write(frame)
            written += 16 + len(frame)
            i += 1


def run_read_packets(path: Path) -> int:
    return sum(1 for x in read_packets(path) if x.__class__ is TcpSegment)


def run_reassemble_only_timed(path: Path) -> int:
    count = 0

    def counted():
        nonlocal count
        for item in read_packets(path):
            count += 1
            yield item

    for _ in reassemble(counted()):
        pass
    return count


def run_tshark(path: Path) -> int:
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.number"], check=True,
                         capture_output=True, text=True).stdout
    return out.count("\n")


# (name, function from capture path to packets seen). Framing can append ("+ framing", fn) here.
STAGES: list[tuple[str, Callable[[Path], int]]] = [
    ("read_packets", run_read_packets),
    ("read_packets + reassemble", run_reassemble_only_timed),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--seed", type=Path)
    ap.add_argument("--path", type=Path, default=Path("/tmp/kafka_wire_bench.pcap"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--quick-tshark", action="store_true", help="skip the slow full-dissection tshark run")
    args = ap.parse_args()
    if args.rebuild or not args.path.exists():
        build_capture(args.path, args.size_mb, args.seed)
    mb = os.path.getsize(args.path) / 2**20
    rows = []
    for name, fn in STAGES:
        t = time.perf_counter()
        n = fn(args.path)
        rows.append((name, n, time.perf_counter() - t))
    tshark_time = None
    if shutil.which("tshark"):
        # The light run is the baseline: full dissection with TCP desegmentation (and the Kafka
        # dissector on 9092) is shown too, since that is what a person running tshark would get.
        t = time.perf_counter()
        subprocess.run(["tshark", "-r", str(args.path), "-n", "-o", "tcp.desegment_tcp_streams:FALSE", "-q", "-z", "io,stat,0"],
                       check=True, capture_output=True)
        tshark_time = time.perf_counter() - t
        rows.append(("tshark -n -q -z io,stat,0 (no deseg)", rows[0][1], tshark_time))
        if not args.quick_tshark:
            t = time.perf_counter()
            n = run_tshark(args.path)
            rows.append(("tshark -T fields -e frame.number", n, time.perf_counter() - t))
    print(f"capture: {args.path} ({mb:.1f} MB)")
    print(f"{'stage':36} {'packets':>9} {'seconds':>8} {'packets/s':>11} {'MB/s':>7} {'time vs tshark':>15}")
    for name, n, dt in rows:
        ratio = f"{dt / tshark_time:.2f}x" if tshark_time else "-"
        print(f"{name:36} {n:9d} {dt:8.2f} {n / dt:11,.0f} {mb / dt:7.1f} {ratio:>15}")


if __name__ == "__main__":
    main()
