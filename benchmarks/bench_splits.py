"""Benchmark split reads: the work of reading one capture in N partitions, against reading it in one.

Builds (once, in /tmp) a capture of interleaved Kafka sessions: the Ethernet sample captures,
each copy from a client address of its own and started a few milliseconds after the one
before, merged in time order, so that many connections are open at once as in real traffic.
Then, for each N, plans the partitions as the Spark source does (``plan_partitions`` with the
index pass) and reads every partition in this process, one after the other, as N tasks would:

* CPU seconds of the index pass and of all tasks together, and their ratio to N = 1;
* bytes and packet records read by all tasks together, against the file's;
* that the rows of all tasks together are those of N = 1 (same count and digest).

``--without-index`` also measures the old plan, where each task reads the whole file and keeps
its own connections (the work grows with N).

``--gzip`` reads the capture gzipped: the tasks parse only their runs of the decompressed data,
but each decompresses the whole file (bytes and records are of the decompressed data).

``--view records`` (or ``lag``) reads the partitions as the Spark tasks of that view do
(``PartitionReader``, rows to Arrow), all in this process: as if one Python worker ran them
(``--workers W``: as if W workers did, each with its own naming state, one after the other). A
task that meets a topic id its own connections did not name does a naming read of the whole
capture (``naming_pass``), at most once per worker, as far as its ids need, unless another
worker read it to the end (``shared_names``; each plan starts with none shared: a first query);
printed: the CPU seconds of a whole naming read, and how many naming reads each plan's tasks made.

``--named-at F`` builds a capture whose clients fetching by topic id joined after they named their
ids (the sample sessions from their first Fetch by id), all but the one round of copies at
fraction F of the capture, which is whole (a client's metadata refresh); negative F: the ids are
named nowhere. Split slices that read no whole copy then need the naming read.

    python benchmarks/bench_splits.py [--size-mb 100] [--splits 1,2,8,32] [--without-index] [--rebuild]
                                      [--view exchanges|records|lag] [--gzip] [--named-at F] [--workers W]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import heapq
import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks and tests (capture builders)

from benchmarks.bench_capture import sample_seeds
from kafka_protocol_source.capture.index import index_records
from kafka_protocol_source.pipeline import CaptureOptions, read_with
from kafka_protocol_source.spark import naming_pass, shared_names
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader, plan_partitions, slice_scope
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.views.topic_names import TOPIC_NAMING_APIS, first_names
from tests.spark.bigcapture import with_client

_RECORD = struct.Struct("<IIII")
OVERLAP_US = 5_000  # a new session starts every 5 ms


def build(path: Path, size_mb: int, named_at: float | None = None) -> None:
    """Write ``path``: copies of the sample sessions, each from its own client, interleaved in time.

    ``named_at``: a copy of a session that fetches by topic id joins late, at that first Fetch
    (its client named the ids before the capture started), except in the one round of copies at
    that fraction of the capture, which is whole: a client refreshing its metadata. Negative: no
    copy is whole, the ids are named nowhere."""
    seeds = sample_seeds()
    late = seeds if named_at is None else [(f[_first_fetch_by_id(f, port) :], port) for f, port in seeds]
    sizes = [sum(16 + len(frame) for _, frame in frames) for frames, _ in late]
    copies: list[int] = []
    total = 24
    while total < size_mb * 2**20:
        total += sizes[len(copies) % len(seeds)]
        copies.append(len(copies))
    whole = -1 if named_at is None or named_at < 0 else int(named_at * len(copies)) // len(seeds)

    def session(n: int):
        frames, port = (seeds if n // len(seeds) == whole else late)[n % len(seeds)]
        client = bytes((10, n >> 16 & 255, n >> 8 & 255, n & 255))
        start = frames[0][0]
        for i, (ns, frame) in enumerate(frames):
            yield (ns - start) // 1000 + n * OVERLAP_US, n, i, with_client(frame, port, client)

    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for us, _, _, frame in heapq.merge(*(session(n) for n in copies)):
            us += 1_700_000_000 * 10**6
            out.write(_RECORD.pack(us // 10**6, us % 10**6, len(frame), len(frame)))
            out.write(frame)


def _first_fetch_by_id(frames: list[tuple[int, bytes]], broker_port: int) -> int:
    """The index of the frame with a Fetch request of version 13 or later (topics by id) at the
    start of its payload (0: none; the sample sessions send each request in frames of its own)."""
    for i, (_, f) in enumerate(frames):
        if len(f) >= 54 and f[12:14] == b"\x08\x00" and f[23] == 6:
            tcp = 14 + (f[14] & 0xF) * 4
            payload = f[tcp + (f[tcp + 12] >> 4) * 4 :]
            to_broker = int.from_bytes(f[tcp + 2 : tcp + 4], "big") == broker_port
            if to_broker and len(payload) >= 8 and payload[4:6] == b"\x00\x01" and payload[6:8] >= b"\x00\x0d":
                return i
    return 0


def read_plan(path: str, count: int, index: bool, view: str = "exchanges", workers: int = 1) -> dict:
    split = -(-os.path.getsize(path) // count)
    cpu = time.process_time()
    parts = plan_partitions([path], split, index=index)
    plan_cpu = time.process_time() - cpu
    tasks_cpu, rows, digest = 0.0, 0, hashlib.sha256()
    keys: list = []
    options = ReadOptions.parse({"path": path, "view": view})
    reader = PartitionReader(options, default_schema(options))
    os.environ[shared_names.DIRECTORY_VARIABLE] = tempfile.mkdtemp(prefix="bench-splits-names-")  # a first query
    naming_reads = 0
    worker = -1
    for p in sorted(parts, key=lambda p: p.index % workers):  # each worker's tasks, one worker after the other
        if p.index % workers != worker:  # a worker that has not read this capture yet
            naming_reads += _naming_reads_made()
            naming_pass.forget()
            worker = p.index % workers
        cpu = time.process_time()
        if view != "exchanges":
            for batch in reader.read(p):
                keys += map(repr, batch.to_pylist())
            rows = len(keys)
            tasks_cpu += time.process_time() - cpu
            continue
        task_options = CaptureOptions(issues_here=p.index == 0, record_runs=p.runs)
        for ex in read_with(list(p.paths), task_options, slice_scope(p.index, p.count, None)):
            rows += 1
            keys.append((ex.connection_id or "", ex.correlation_id or -1, ex.status, ex.request_packet or -1))
        tasks_cpu += time.process_time() - cpu
    for k in sorted(keys):
        digest.update(repr(k).encode())
    runs = [r for p in parts for r in p.runs.values()]
    return {
        "partitions": len(parts),
        "plan_cpu": plan_cpu,
        "tasks_cpu": tasks_cpu,
        "bytes": sum(r.byte_count for r in runs) if runs else None,  # None: each task reads the whole file
        "records": sum(sum(r.flat[3::4]) for r in runs) if runs else None,
        "rows": rows,
        "digest": digest.hexdigest()[:16],
        "naming_reads": naming_reads + _naming_reads_made(),
    }


def _naming_reads_made() -> int:
    """Naming reads this worker made (not those whose names another worker's finished read gave)."""
    return sum(r.read > 0 for r in naming_pass.reads())


def naming_read_cpu(path: str) -> float:
    """CPU seconds of a naming read of ``path`` (every connection, the topic-naming apis only)."""
    cpu = time.process_time()
    first_names(read_with([path], CaptureOptions(apis=TOPIC_NAMING_APIS, issues_here=False)))
    return time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--splits", default="1,2,8,32")
    ap.add_argument("--path", type=Path, default=Path("/tmp/kafka_wire_bench_splits.pcap"))
    ap.add_argument("--without-index", action="store_true", help="also measure tasks that each read the whole file")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--view", choices=("exchanges", "records", "lag"), default="exchanges")
    ap.add_argument("--gzip", action="store_true", help="read the capture gzipped (made once, next to it)")
    ap.add_argument("--workers", type=int, default=1, help="Python workers the tasks of a plan are dealt to")
    ap.add_argument(
        "--named-at",
        type=float,
        help="sessions that fetch by topic id join late, but one copy, at this fraction of the capture"
        " (negative: none), is whole and names the ids (built at --path; use --rebuild when changing it)",
    )
    args = ap.parse_args()
    if args.rebuild or not args.path.exists():
        build(args.path, args.size_mb, args.named_at)
    path, size = str(args.path), os.path.getsize(args.path)  # bytes read are of the decompressed data
    if args.gzip:
        path += ".gz"
        if args.rebuild or not os.path.exists(path):
            with open(args.path, "rb") as plain, gzip.open(path, "wb", compresslevel=6) as packed:
                shutil.copyfileobj(plain, packed)
    one = read_plan(path, 1, index=True, view=args.view)
    packets = sum(index_records(path, 1, lambda _: 0)[0].flat[3::4])  # type: ignore[index]
    print(f"capture: {path} ({os.path.getsize(path) / 2**20:.1f} MB, {one['rows']} rows of the {args.view} view)")
    if args.view != "exchanges":
        print(f"a naming read (not in the bytes and records read below): {naming_read_cpu(path):.2f} CPU s")
    header = (
        f"{'plan':18} {'parts':>5} {'index cpu s':>11} {'tasks cpu s':>11} {'cpu vs N=1':>10} {'bytes vs file':>13}"
    )
    print(header + f" {'records vs file':>15} {'same rows':>9}" + (" naming reads" if args.view != "exchanges" else ""))
    plans = [(n, True) for n in map(int, args.splits.split(","))]
    if args.without_index:
        plans += [(n, False) for n in map(int, args.splits.split(",")) if n > 1]
    for n, index in plans:
        got = one if (n, index) == (1, True) else read_plan(path, n, index, args.view, args.workers)
        total = got["plan_cpu"] + got["tasks_cpu"]
        base = one["plan_cpu"] + one["tasks_cpu"]
        records = f"{got['records'] / packets:.3f}x" if got["records"] is not None else f"{got['partitions']:.3f}x"
        read = got["bytes"] / size if got["bytes"] is not None else got["partitions"]
        same = got["rows"] == one["rows"] and got["digest"] == one["digest"]
        print(
            f"{('index' if index else 'whole file each') + f', N={n}':18} {got['partitions']:5d}"
            f" {got['plan_cpu']:11.2f} {got['tasks_cpu']:11.2f} {total / base:9.2f}x {read:12.3f}x"
            f" {records:>15} {'yes' if same else 'NO':>9}"
            + (f" {got['naming_reads']:12d}" if args.view != "exchanges" else "")
        )
        if not same:
            raise SystemExit(f"N={n}: the rows differ from N=1 ({got['rows']} against {one['rows']})")


if __name__ == "__main__":
    main()
