"""Benchmark the HTML report: seconds to read the views, run the report's queries and render, on a big capture.

Builds (once, in /tmp) a capture of replicated sample sessions as benchmarks/bench_spark.py does,
then in this process: one SparkSession, ``compute_report`` (the views checkpointed, then every query
of ``report/queries.py``) and ``render_html``, each timed, plus the size of the written file.

    python benchmarks/bench_report.py [--size-mb 16] [--master local[2]] [--rebuild]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=16)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    from benchmarks.bench_spark import build

    capture = Path(f"/tmp/kafka-wire-bench-report-{args.size_mb}mb.pcap")
    if args.rebuild or not capture.exists():
        build(capture, args.size_mb)

    from kafka_protocol_source.cli.session import start_session
    from kafka_protocol_source.report.compute import compute_report
    from kafka_protocol_source.report.html import render_html

    spark, _ = start_session(args.master, verbose=False)  # the command's own quiet session
    exchanges = spark.read.format("kafka-wire").load(str(capture))
    records = spark.read.format("kafka-wire").option("view", "records").load(str(capture))
    t0 = time.perf_counter()
    data = compute_report(spark, exchanges, records)
    t1 = time.perf_counter()
    html = render_html(data)
    t2 = time.perf_counter()
    spark.stop()
    s = data.summary
    print(
        f"capture {capture.stat().st_size / 2**20:.1f} MB, {s['exchanges']} exchanges, "
        f"{s['produced_records'] + s['fetched_records']} records, master {args.master}"
    )
    print(f"compute_report (read + {len(data.results)} queries) {t1 - t0:8.1f} s")
    print(f"render_html                          {t2 - t1:8.2f} s")
    print(f"report size                          {len(html.encode()) / 1024:8.0f} KB")


if __name__ == "__main__":
    main()
