"""``python -m kafka_protocol_source.report CAPTURE... --html OUT.html``: the HTML report from a shell.

A small stand-alone entry point until ``kafka-wire report --html`` calls ``write_html_report``
itself; it reads the captures with the kafka-wire data source and writes the one file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from ..spark import register
from .html import write_html_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_protocol_source.report",
        description="Write a self-contained HTML report of Kafka traffic in captures.",
    )
    parser.add_argument("paths", nargs="+", metavar="CAPTURE", help="pcap/pcapng files, stream dumps, folders, globs")
    parser.add_argument("--html", required=True, metavar="OUT.html", help="the report file to write")
    parser.add_argument("--top", type=int, default=10, help="rows of the clients, connections and topics tables")
    parser.add_argument("--ports", default="9092", help="broker ports, comma-separated (default 9092)")
    parser.add_argument("--specs", help="message definitions: a folder of Kafka JSON files or a krammar file")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other kafka-wire read option (repeatable)",
    )
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    args = parser.parse_args(argv)
    options = {
        "ports": args.ports,
        **({"specs": args.specs} if args.specs else {}),
        **dict(o.split("=", 1) for o in args.option),
    }

    spark = _quiet_session(args.master)
    try:

        def load(**extra):
            reader = spark.read.format("kafka-wire").options(**{**options, **extra})
            return reader.load(args.paths if len(args.paths) > 1 else args.paths[0])

        title = "kafka-wire report: " + ", ".join(Path(p).name for p in args.paths)
        data = write_html_report(spark, load(), load(view="records"), args.html, title=title, top=args.top)
    finally:
        spark.stop()
    s = data.summary
    print(
        f"wrote {args.html}: {s['exchanges']} exchanges on {s['connections']} connections, {s['not_fine']} not ok",
        file=sys.stderr,
    )
    return 0


def _quiet_session(master: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # read when the session starts
    spark = (
        SparkSession.builder.master(master)
        .appName("kafka-wire-report")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


if __name__ == "__main__":
    sys.exit(main())
