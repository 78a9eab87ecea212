"""Benchmark the kafka-wire Spark source: rows/s of the exchanges and records views, and local[2] over local[1].

Builds (once, in /tmp) a large capture by replicating the Ethernet sample captures, each copy from
a client address of its own so that every copy is a real Kafka session on its own connections
(tests/spark/bigcapture.py), then, for each master in turn (a fresh SparkSession in a subprocess
each, so the JVMs do not share anything), times:

* count() of the default (exchanges) view and of the records view, and
* collect() of a few columns of each (rows through Arrow into the Python driver),

after one warm-up query (Python workers started, parsers built). Prints a table of seconds,
rows/s and MB/s per master, and the speed-up of the last master over the first.

    python benchmarks/bench_spark.py [--size-mb 64] [--masters local[1],local[2]] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLES = ROOT / "sample_captures"
SEEDS = [
    "tansu_confluent_kafka_all_codecs.pcap",
    "mock_aiokafka_all_codecs.pcap",
    "mock_kafka_python_all_codecs.pcap",
    "tansu_kafka_python_legacy_magic1_rejected.pcap",
]

MEASURES = [  # (name, view, action)
    ("exchanges count()", "exchanges", "count"),
    ("exchanges collect(5 cols)", "exchanges", "collect"),
    ("records count()", "records", "count"),
    ("records collect(5 cols)", "records", "collect"),
]
COLLECT_COLUMNS = {
    "exchanges": ["api_name", "status", "latency_ms", "request_time", "client_id"],
    "records": ["topic", "offset", "key", "value", "timestamp"],
}


def build(path: Path, size_mb: int) -> None:
    """Concatenate replicated copies of a few samples (pcap files of one link type concatenate by records)."""
    from tests.spark.bigcapture import replicate

    part_size = size_mb * 2**20 // len(SEEDS)
    with open(path, "wb") as out:
        for i, seed in enumerate(SEEDS):
            part = path.with_suffix(f".part{i}")
            replicate(SAMPLES / seed, part, size_bytes=part_size)
            data = part.read_bytes()
            out.write(data if i == 0 else data[24:])  # one global header
            part.unlink()


def measure(path: str, master: str) -> dict:
    """Runs in the child process: one SparkSession, each measure once after a warm-up."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kafka_protocol_source

    spark = (
        SparkSession.builder.master(master)
        .appName("kafka-wire-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafka_protocol_source.register(spark)
    # One split per core: every split reads all packets of the file and keeps its own connections,
    # so more splits than cores only repeat the packet parsing (4 per core measured 0.6-1.3x).
    cores = (
        int(master[len("local[") : -1]) if master.startswith("local[") and master[6:-1].isdigit() else os.cpu_count()
    )
    split = -(-os.path.getsize(path) // cores)

    def df(view):
        return spark.read.format("kafka-wire").option("view", view).option("splitSize", str(split)).load(path)

    df("exchanges").where("api_key = 18").count()  # warm-up: workers up, parsers built
    results = {}
    for name, view, action in MEASURES:
        t = time.perf_counter()
        if action == "count":
            n = df(view).count()
        else:
            n = len(df(view).select(*COLLECT_COLUMNS[view]).collect())
        results[name] = (n, time.perf_counter() - t)
    spark.stop()
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=64)
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--path", type=Path, default=Path("/tmp/kafka_wire_bench_spark.pcap"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(str(args.path), args.child)))
        return
    if args.rebuild or not args.path.exists():
        build(args.path, args.size_mb)
    mb = os.path.getsize(args.path) / 2**20
    masters = args.masters.split(",")
    table = {}
    for master in masters:  # one after the other, each its own JVM
        out = subprocess.run(
            [sys.executable, __file__, "--path", str(args.path), "--child", master],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        table[master] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"capture: {args.path} ({mb:.1f} MB); cores: {os.cpu_count()}")
    head = f"{'measure':28} {'master':10} {'rows':>9} {'seconds':>8} {'rows/s':>10} {'MB/s':>6}"
    print(head)
    print("-" * len(head))
    for name, _, _ in MEASURES:
        for master in masters:
            n, dt = table[master][name]
            print(f"{name:28} {master:10} {n:9d} {dt:8.2f} {n / dt:10,.0f} {mb / dt:6.1f}")
    first, last = masters[0], masters[-1]
    print(f"\nspeed-up {last} over {first}:")
    for name, _, _ in MEASURES:
        print(f"  {name:28} {table[first][name][1] / table[last][name][1]:.2f}x")


if __name__ == "__main__":
    main()
