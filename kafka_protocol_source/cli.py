"""The ``kafka-wire`` command: a traffic report, or any SQL, over captures, through Spark.

    kafka-wire report PATH... [--ports 9092,9093] [--top 10] [--specs DIR_OR_KRAMMAR_FILE]
    kafka-wire sql PATH... "SELECT api_name, count(*) FROM traffic GROUP BY 1"

Both read the captures with the ``kafka-wire`` data source and register the views ``traffic``
(one row per exchange) and ``records`` (one row per record produced or fetched).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from .spec.error_codes import error_name

REPORT_QUERIES = {
    "Requests per API": """
        SELECT api_name AS api, count(*) AS requests,
               concat_ws(',', transform(array_sort(collect_set(api_version)), v -> cast(v AS string))) AS versions,
               count(DISTINCT client_id) AS clients,
               round(percentile_approx(latency_ms, 0.5), 2) AS p50_ms,
               round(percentile_approx(latency_ms, 0.99), 2) AS p99_ms,
               sum(CASE WHEN status <> 'ok' THEN 1 ELSE 0 END) AS not_ok,
               array_sort(array_distinct(flatten(collect_list(coalesce(error_codes, array()))))) AS error_codes
        FROM traffic WHERE api_name IS NOT NULL GROUP BY api_name ORDER BY requests DESC, api""",
    "Requests per client id": """
        SELECT coalesce(client_id, '(none)') AS client_id, count(*) AS requests,
               count(DISTINCT api_name) AS apis, count(DISTINCT client_address) AS connections_from,
               round(percentile_approx(latency_ms, 0.99), 2) AS p99_ms
        FROM traffic WHERE api_name IS NOT NULL GROUP BY 1 ORDER BY requests DESC, client_id""",
    "Top topics by records": """
        SELECT coalesce(topic, topic_id, '(unknown)') AS topic,
               sum(CASE WHEN direction = 'produce' THEN 1 ELSE 0 END) AS produced,
               sum(CASE WHEN direction = 'produce' THEN coalesce(length(key), 0) + coalesce(length(value), 0) END)
                   AS produced_bytes,
               sum(CASE WHEN direction = 'fetch' THEN 1 ELSE 0 END) AS fetched,
               sum(CASE WHEN direction = 'fetch' THEN coalesce(length(key), 0) + coalesce(length(value), 0) END)
                   AS fetched_bytes
        FROM records GROUP BY 1 ORDER BY produced + fetched DESC, topic LIMIT {top}""",
    "Exchanges that are not ok": """
        SELECT status, count(*) AS exchanges, first(error, true) AS example
        FROM traffic WHERE status <> 'ok' GROUP BY status ORDER BY exchanges DESC""",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-wire", description="Kafka traffic in packet captures, as tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="print a traffic summary of the captures")
    report.add_argument("paths", nargs="+", help="pcap/pcapng files (.gz too), stream dumps, directories, globs")
    report.add_argument("--top", type=int, default=10, help="how many topics to list")
    sql = sub.add_parser("sql", help="run SQL over the views traffic and records")
    sql.add_argument("paths", nargs="+", help="captures, then the query as the last argument")
    for p in (report, sql):
        p.add_argument("--ports", default="9092", help="broker ports, comma-separated (default 9092)")
        p.add_argument("--specs", help="message definitions to decode with: a directory of Kafka JSON files "
                                       "or a krammar file (default: the bundled specs)")
        p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                       help="any other kafka-wire read option (repeatable)")
        p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    args = parser.parse_args(argv)
    if args.command == "sql":
        if len(args.paths) < 2:
            parser.error("sql needs at least one path and a query")
        args.paths, args.query = args.paths[:-1], args.paths[-1]
    if args.specs:
        from .spec.registry import registry_for  # noqa: PLC0415

        try:  # before starting Spark: a definition error is one line, not a JVM stack trace
            registry_for(args.specs)
        except (OSError, ValueError) as e:
            print(f"kafka-wire: --specs: {e}", file=sys.stderr)
            return 2
    if not _java_available():
        print("kafka-wire needs Java (17 or newer) for Spark: install a JDK, e.g. "
              "'apt-get install openjdk-17-jre-headless', or set JAVA_HOME.", file=sys.stderr)
        return 2
    options = {"ports": args.ports, **({"specs": args.specs} if args.specs else {}),
               **dict(o.split("=", 1) for o in args.option)}
    spark = _session(args.master)
    try:
        _register_views(spark, args.paths, options)
        if args.command == "report":
            _report(spark, args.paths, args.top)
        else:
            spark.sql(args.query).show(1000, truncate=False)
    finally:
        spark.stop()
    return 0


def _java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return True
    return shutil.which("java") is not None


def _session(master: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # noqa: PLC0415 - start the JVM only once Java is known to be there

    spark = (SparkSession.builder.master(master).appName("kafka-wire")
             .config("spark.ui.showConsoleProgress", "true")  # the progress bar while captures are read
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from .spark import register  # noqa: PLC0415

    register(spark)
    return spark


def _register_views(spark, paths: list[str], options: dict) -> None:
    def load(**extra):
        reader = spark.read.format("kafka-wire")
        for key, value in {**options, **extra}.items():
            reader = reader.option(key, value)
        return reader.load(paths if len(paths) > 1 else paths[0])

    traffic = load()
    traffic.cache().createOrReplaceTempView("traffic")
    load(view="records").createOrReplaceTempView("records")


def _report(spark, paths: list[str], top: int) -> None:
    print(f"kafka-wire report: {', '.join(paths)}", file=sys.stderr)
    summary = spark.sql("SELECT count(*) AS n, count(DISTINCT connection_id) AS c, min(request_time) AS t0, "
                        "max(coalesce(response_time, request_time)) AS t1 FROM traffic").first()
    print(f"\n{summary.n} exchanges on {summary.c} connections, {summary.t0} .. {summary.t1} UTC\n")
    for title, query in REPORT_QUERIES.items():
        rows = spark.sql(query.format(top=top)).collect()
        print(f"== {title} ==")
        if not rows:
            print("(none)\n")
            continue
        print(_table([r.asDict() for r in rows]))
        print()


def _table(rows: list[dict]) -> str:
    def cell(key, value):
        if key == "error_codes" and value is not None:
            return ", ".join(f"{c} {error_name(c)}" for c in value) or "-"
        return "-" if value is None else str(value)

    keys = list(rows[0])
    cells = [[cell(k, r[k]) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    lines = ["  ".join(k.ljust(w) for k, w in zip(keys, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
