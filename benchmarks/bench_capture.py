"""Benchmark the capture and tcp stages against tshark on one large capture.

Builds (once, in /tmp) a ~100 MB pcap by replicating crafted Kafka-sized packets (or the packets
of --seed CAPTURE) over many connections with shifted ports and timestamps, then times
read_packets, read_packets + reassemble, and tshark on the same file, printing packets/s, MB/s
and the ratio to tshark. Later stages add a row by appending to STAGES (a name and a function
from the capture path to the number of items it produced; rates are per captured TCP packet).

--samples builds the file from the Ethernet pcaps in sample_captures/ instead, replicated with a
new client address per copy so every copy is a real Kafka session: then read_capture (frame,
pair and decode every exchange) is timed too, against tshark dissecting Kafka on the broker ports.

    python benchmarks/bench_capture.py [--size-mb 100] [--seed sample.pcap | --samples] [--rebuild]

--goal (with --samples) measures issue 13's goal 1 instead: best-of-3 whole-process times, on the
same file in the same run, of `tshark -T fields -e kafka.correlation_id`, `tshark -T json -j kafka`
and a fresh Python process running read_capture that walks every field of every decoded body,
printing packets/s of each and read_capture's ratio to each tshark. It then checks, untimed, that
the exchanges are the ones the code before the optimisations gave: a digest of every exchange
against the one stored in goal_digests.json for that --size-mb (--store-digest records it).

    python benchmarks/bench_capture.py --samples --goal --size-mb 250 [--runs 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package (its capture builders)

from kafka_protocol_source import read_capture
from kafka_protocol_source.capture import TcpSegment, read_packets
from kafka_protocol_source.tcp import reassemble
from tests.spark.bigcapture import with_client

SAMPLES = Path(__file__).resolve().parents[1] / "sample_captures"
# broker ports of the capture being measured: 9092 for crafted captures, the samples' for --samples
BROKER_PORTS: list[int] = [9092]


def _crafted_frames() -> list[bytes]:
    from tests.capture import pcapbuild as b

    # Kafka-like mix: small requests, full-MSS fetch responses, pure ACKs.
    sizes = [60, 200, 1448, 1448, 1448, 0, 512]
    return [
        b.ether(b.ipv4("10.0.0.1", "10.1.0.1", b.tcp(40000, 9092, 0, flags=0x18 if n else 0x10, payload=b"k" * n)))
        for n in sizes
    ]


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


def sample_seeds() -> list[tuple[list[tuple[int, bytes]], int]]:
    """(packets as (ns, Ethernet frame), broker port) of each classic Ethernet pcap among the samples."""
    from kafka_protocol_source.capture.pcap import read_pcap_frames
    from kafka_protocol_source.capture.source import open_capture

    seeds = []
    for produced in sorted(SAMPLES.glob("*.produced.json")):
        manifest = json.loads(produced.read_text())
        with open_capture(SAMPLES / manifest["capture"]) as (read, fmt, head):
            if fmt.container != "pcap":
                continue
            frames = [(f[2], bytes(f[4])) for f in read_pcap_frames(read, head) if isinstance(f, tuple) and f[3] == 1]
        if frames:
            seeds.append((frames, manifest["broker"]["port"]))
    return seeds


def build_capture_from_samples(path: Path, size_mb: int) -> list[int]:
    """Write `path`: the sample sessions over and over, each copy from a client address of its own.

    Rewriting only the client's IPv4 address (10.a.b.c for copy n) keeps every copy a complete,
    valid Kafka session on its own 4-tuples; copies follow one another in time. Returns the broker
    ports. No checksums are fixed: neither read_capture nor tshark's default dissection checks them.
    """
    seeds = sample_seeds()
    target = size_mb * 2**20
    rec = struct.Struct("<IIII")
    written = 0
    ts_shift = 0
    copy = 0
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        while written < target:
            frames, port = seeds[copy % len(seeds)]
            client_ip = bytes((10, copy >> 16 & 255, copy >> 8 & 255, copy & 255))
            start = frames[0][0]
            for ns, frame in frames:
                f = with_client(frame, port, client_ip)
                t = ts_shift + (ns - start) // 1000
                out.write(rec.pack(t // 10**6 + 1_700_000_000, t % 10**6, len(f), len(f)))
                out.write(f)
                written += 16 + len(f)
            ts_shift = t + 1000
            copy += 1
    return sorted({port for _, port in seeds})


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
    out = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", "-e", "frame.number"], check=True, capture_output=True, text=True
    ).stdout
    return out.count("\n")


def run_read_capture(path: Path) -> int:
    """Exchanges out of the whole pipeline: read, reassemble, frame, pair, decode every body."""
    return sum(1 for _ in read_capture(path, ports=BROKER_PORTS))


def run_tshark_kafka(path: Path) -> int:
    """Kafka PDUs as tshark dissects them: TCP desegmentation plus the Kafka dissector on the broker ports."""
    cmd = ["tshark", "-r", str(path), "-n"]
    for port in BROKER_PORTS:
        cmd += ["-d", f"tcp.port=={port},kafka"]
    cmd += ["-Y", "kafka", "-T", "fields", "-E", "occurrence=a", "-e", "kafka.correlation_id"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return sum(line.count(",") + 1 for line in out.splitlines() if line)


# (name, function from capture path to items produced: segments, events, exchanges, PDUs).
STAGES: list[tuple[str, Callable[[Path], int]]] = [
    ("read_packets", run_read_packets),
    ("read_packets + reassemble", run_reassemble_only_timed),
    ("read_capture (+ frame + pair + decode)", run_read_capture),
]


DIGESTS = Path(__file__).resolve().with_name("goal_digests.json")


def walk_fields(value) -> int:
    """Touch every field of a decoded body (dicts, lists, and the values in them): how many there are."""
    n = 0
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        v = pop()
        n += 1
        t = type(v)
        if t is dict:
            push(v.values())
        elif t is list:
            push(v)
    return n


def goal_worker(path: str, ports: list[int], digest: bool) -> None:
    """One read_capture over ``path`` with every body walked (the timed process), or its digest."""
    exchanges = fields = 0
    h = hashlib.sha256()
    for ex in read_capture(path, ports=ports):
        exchanges += 1
        fields += walk_fields(ex.request) + walk_fields(ex.response)
        if digest:  # the file's name, not its folder: the same capture may be built anywhere
            h.update(repr(dataclasses.replace(ex, capture_file=os.path.basename(ex.capture_file))).encode())
    print(json.dumps({"exchanges": exchanges, "fields": fields, "digest": h.hexdigest() if digest else None}))


def _timed(cmd: list[str], keep: bool) -> tuple[float, bytes]:
    """Seconds the whole process took, and its output if ``keep`` (else it goes to /dev/null)."""
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE if keep else subprocess.DEVNULL).stdout
    return time.perf_counter() - t, out or b""


def goal(path: Path, size_mb: int, runs: int, store: bool) -> None:
    """Issue 13, goal 1: read_capture (every body walked) against tshark's Kafka dissection."""
    decode_as = [a for port in BROKER_PORTS for a in ("-d", f"tcp.port=={port},kafka")]
    tshark = ["tshark", "-r", str(path), "-n", *decode_as]
    ours = [sys.executable, __file__, "--worker", str(path), "--ports", ",".join(map(str, BROKER_PORTS))]
    # (command, keep its output): the JSON (~6x the capture) goes to /dev/null, not into a pipe we hold
    commands = {
        "tshark -T fields -e kafka.correlation_id": ([*tshark, "-T", "fields", "-e", "kafka.correlation_id"], True),
        "tshark -T json -j kafka": ([*tshark, "-T", "json", "-j", "kafka"], False),
        "read_capture, every field walked": (ours, True),
    }
    best = {name: float("inf") for name in commands}
    outputs: dict[str, bytes] = {}
    for _ in range(runs):  # alternate the three so the host's noise falls on all of them alike
        for name, (cmd, keep) in commands.items():
            t, outputs[name] = _timed(cmd, keep)
            best[name] = min(best[name], t)
    packets = outputs["tshark -T fields -e kafka.correlation_id"].count(b"\n")  # one line per frame
    mb = os.path.getsize(path) / 2**20
    ours_name = "read_capture, every field walked"
    result = json.loads(outputs[ours_name])
    print(
        f"capture: {path} ({mb:.1f} MB, {packets} packets, {result['exchanges']} exchanges, {result['fields']} fields)"
    )
    print(f"best of {runs}, whole process; ratio = read_capture packets/s over this row's")
    print(f"{'':40} {'seconds':>8} {'packets/s':>11} {'ratio':>7}")
    for name, dt in best.items():
        print(f"{name:40} {dt:8.2f} {packets / dt:11,.0f} {dt / best[ours_name]:6.2f}x")
    _check_digest(path, size_mb, store)


def _check_digest(path: Path, size_mb: int, store: bool) -> None:
    """The exchanges must be exactly what the code before the optimisations gave (untimed)."""
    out = subprocess.run(
        [sys.executable, __file__, "--worker", str(path), "--ports", ",".join(map(str, BROKER_PORTS)), "--digest"],
        check=True,
        capture_output=True,
    ).stdout
    digest = json.loads(out)["digest"]
    known = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}
    if store:
        known[str(size_mb)] = digest
        DIGESTS.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
        print(f"digest of the exchanges stored for --size-mb {size_mb}: {digest}")
    elif str(size_mb) not in known:
        print(f"no stored digest for --size-mb {size_mb} (this run's: {digest})")
    elif known[str(size_mb)] != digest:
        raise SystemExit(f"exchanges differ from the stored ones: {digest} != {known[str(size_mb)]}")
    else:
        print(f"exchanges identical to the stored ones (sha256 {digest[:16]}…)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--seed", type=Path)
    ap.add_argument("--samples", action="store_true", help="replicate the sample captures (real Kafka sessions)")
    ap.add_argument("--path", type=Path)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--quick-tshark", action="store_true", help="skip the slow full-dissection tshark run")
    ap.add_argument("--goal", action="store_true", help="issue 13 goal 1: read_capture vs tshark's Kafka dissection")
    ap.add_argument("--runs", type=int, default=3, help="--goal: best of this many runs of each")
    ap.add_argument("--store-digest", action="store_true", help="--goal: record the exchanges' digest as the reference")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--ports", help=argparse.SUPPRESS)
    ap.add_argument("--digest", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        goal_worker(args.worker, [int(p) for p in args.ports.split(",")], args.digest)
        return
    if args.path is None:
        args.path = Path(
            f"/tmp/kafka_wire_bench_samples_{args.size_mb}mb.pcap" if args.samples else "/tmp/kafka_wire_bench.pcap"
        )
    if args.samples:
        BROKER_PORTS[:] = (
            build_capture_from_samples(args.path, args.size_mb)
            if args.rebuild or not args.path.exists()
            else sorted({port for _, port in sample_seeds()})
        )
    elif args.rebuild or not args.path.exists():
        build_capture(args.path, args.size_mb, args.seed)
    if args.goal:
        if not args.samples:
            raise SystemExit("--goal needs --samples (Kafka sessions for tshark to dissect)")
        goal(args.path, args.size_mb, args.runs, args.store_digest)
        return
    mb = os.path.getsize(args.path) / 2**20
    rows = []
    for name, fn in STAGES:
        t = time.perf_counter()
        n = fn(args.path)
        rows.append((name, n, time.perf_counter() - t))
    packets = rows[0][1]
    tshark_time = None
    if shutil.which("tshark"):
        # The light run is the baseline: full dissection with TCP desegmentation (and the Kafka
        # dissector on 9092) is shown too, since that is what a person running tshark would get.
        t = time.perf_counter()
        subprocess.run(
            ["tshark", "-r", str(args.path), "-n", "-o", "tcp.desegment_tcp_streams:FALSE", "-q", "-z", "io,stat,0"],
            check=True,
            capture_output=True,
        )
        tshark_time = time.perf_counter() - t
        rows.append(("tshark -n -q -z io,stat,0 (no deseg)", rows[0][1], tshark_time))
        if not args.quick_tshark:
            t = time.perf_counter()
            n = run_tshark(args.path)
            rows.append(("tshark -T fields -e frame.number", n, time.perf_counter() - t))
            if args.samples:
                t = time.perf_counter()
                n = run_tshark_kafka(args.path)
                rows.append(("tshark Kafka PDUs (deseg + dissect)", n, time.perf_counter() - t))
    print(f"capture: {args.path} ({mb:.1f} MB, {packets} TCP packets; broker ports {BROKER_PORTS})")
    print(f"{'stage':40} {'items':>9} {'seconds':>8} {'packets/s':>11} {'MB/s':>7} {'time vs tshark':>15}")
    for name, n, dt in rows:
        ratio = f"{dt / tshark_time:.2f}x" if tshark_time else "-"
        print(f"{name:40} {n:9d} {dt:8.2f} {packets / dt:11,.0f} {mb / dt:7.1f} {ratio:>15}")


if __name__ == "__main__":
    main()
