"""Benchmark memory: peak RSS of reading captures of growing length, which must not grow with it.

Builds (once, in /tmp) captures of interleaved Kafka sessions of the given sizes (the sample
sessions, each copy from a client of its own, as ``bench_splits`` builds them), then reads each
in a fresh child process and prints its peak resident set size (``ru_maxrss``):

* ``read_capture``: every exchange decoded and dropped, as a consumer streaming the rows does;
* ``spark task``: what a Spark Python worker runs for one partition of the exchanges view
  (``PartitionReader.read``, rows into Arrow batches), without the JVM.

The baseline row is the same child importing everything and reading nothing, so the figures
say what reading costs on top of the interpreter and the libraries.

    python benchmarks/bench_memory.py [--sizes-mb 250,1000] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def child(mode: str, path: str) -> dict:
    from kafka_protocol_source import read_capture
    from kafka_protocol_source.spark.options import ReadOptions
    from kafka_protocol_source.spark.partition_reader import CapturePartition, PartitionReader
    from kafka_protocol_source.spark.source import default_schema

    start = time.perf_counter()
    rows = 0
    if mode == "read_capture":
        for _ in read_capture(path):
            rows += 1
    elif mode == "spark task":
        options = ReadOptions.parse({"path": path})
        for batch in PartitionReader(options, default_schema(options)).read(CapturePartition((path,))):
            rows += batch.num_rows
    return {
        "rows": rows,
        "seconds": time.perf_counter() - start,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_child(mode: str, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, path], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mb", default="250,1000")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    from benchmarks.bench_splits import build

    paths = []
    for mb in map(int, args.sizes_mb.split(",")):
        path = Path(f"/tmp/kafka_wire_bench_memory_{mb}mb.pcap")
        if args.rebuild or not path.exists():
            build(path, mb)
        paths.append(path)
    base = run_child("baseline", str(paths[0]))
    print(f"baseline (imports, nothing read): peak {base['peak_mb']:.0f} MB")
    print(f"{'reader':14} {'capture MB':>10} {'rows':>9} {'peak RSS MB':>11} {'over baseline':>13}")
    for mode in ("read_capture", "spark task"):
        for path in paths:
            got = run_child(mode, str(path))
            size, peak = os.path.getsize(path) / 2**20, got["peak_mb"]
            print(f"{mode:14} {size:10.0f} {got['rows']:9d} {peak:11.0f} {peak - base['peak_mb']:13.0f}")


if __name__ == "__main__":
    main()
