"""Benchmark ``kafka-wire report``'s text report with and without the bodies in its exchanges view.

The command reads the exchanges view once, caches it and runs the report's queries over it; none
of them reads ``request`` or ``response``. This times that work (``register_views``,
``summarize``, ``print_report``) in one SparkSession, the view read with its bodies (as every
command did before) and without them (as ``report`` does now), in turns, after a warm-up on a
sample capture, and prints the ratio of the best times and the size of each cached view. Both
ways must print the same report.

    python benchmarks/bench_cli_report.py [--size-mb 24] [--master local[2]] [--rounds 2]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SAMPLE = ROOT / "sample_captures" / "tansu_confluent_kafka_all_codecs.pcap"


def report_once(spark, path: str, bodies: bool) -> tuple[float, str, int]:
    """Seconds to register, summarise and print the report; the report; bytes the cached view holds."""
    from kafka_protocol_source.cli.report import print_report
    from kafka_protocol_source.cli.views import EXCHANGES, register_views, summarize

    out = io.StringIO()
    start = time.perf_counter()
    register_views(spark, [path], {"ports": "9092"}, bodies=bodies)
    print_report(spark, summarize(spark), 10, out)
    seconds = time.perf_counter() - start
    cached = sum(info.memSize() + info.diskSize() for info in spark.sparkContext._jsc.sc().getRDDStorageInfo())
    spark.table(EXCHANGES).unpersist(blocking=True)
    return seconds, out.getvalue(), cached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=24)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from benchmarks.bench_spark import build

    capture = Path(f"/tmp/kafka-wire-bench-cli-report-{args.size_mb}mb.pcap")
    if not capture.exists():
        build(capture, args.size_mb)

    from kafka_protocol_source.cli.session import start_session

    spark, _ = start_session(args.master, verbose=False)  # the session kafka-wire report runs in
    for bodies in (True, False):  # the JVM's and the workers' first runs, on a small capture
        report_once(spark, str(SAMPLE), bodies)
    times: dict[bool, list[float]] = {True: [], False: []}
    reports: dict[bool, str] = {}
    cached: dict[bool, int] = {}
    for _ in range(args.rounds):
        for bodies in (True, False):
            seconds, reports[bodies], cached[bodies] = report_once(spark, str(capture), bodies)
            times[bodies].append(seconds)
    spark.stop()
    if reports[True] != reports[False]:
        raise SystemExit("the report without bodies differs from the report with them")
    with_bodies, without = min(times[True]), min(times[False])
    print(f"capture {capture.stat().st_size / 2**20:.1f} MB, master {args.master}, best of {args.rounds}")
    print(f"report, bodies in the view:  {with_bodies:6.1f} s  cached {cached[True] / 2**20:7.1f} MB")
    print(f"report, without bodies:      {without:6.1f} s  cached {cached[False] / 2**20:7.1f} MB")
    print(f"speed-up {with_bodies / without:.2f}x; cache {cached[True] / max(cached[False], 1):.1f}x smaller")


if __name__ == "__main__":
    main()
