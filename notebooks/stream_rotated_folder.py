"""A live per-minute request rate and p99 latency over a folder that a capture tool rotates into.

Run ``python notebooks/stream_rotated_folder.py``: it cuts a bundled sample capture into five
files, as ``tcpdump -G`` would, drops them into a folder one by one while a streaming query
follows the folder, and prints what the query has emitted after each file. Point the same
query at the folder your ``tcpdump``/``dumpcap`` writes (see the README's Streaming section).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.cuts: rebuilds a capture's TCP segments into pieces

from tests.cuts import segments_of  # noqa: E402
from tests.stream.test_rotated import by_time  # noqa: E402

SAMPLE = ROOT / "sample_captures" / "tansu_confluent_kafka_all_codecs.pcap"


def main() -> None:
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="kafka-wire-stream-"))
    folder = work / "capture"
    folder.mkdir()
    pieces = [cut.write(work / f"k-{i:02d}.pcap") for i, cut in enumerate(by_time(segments_of(SAMPLE), 5))]

    exchanges = (spark.readStream.format("kafka-wire").option("ports", "33325")
                 .option("quietTimeout", "5").load(str(folder)))
    once = "coalesce(note, '') NOT LIKE '%answered after an earlier micro-batch%'"  # each request once
    per_minute = (exchanges.where(once).withWatermark("request_time", "2 minutes")
                  .groupBy(F.window("request_time", "1 minute"), "api_name")
                  .agg(F.count("*").alias("requests"),
                       F.percentile_approx("latency_ms", 0.99).alias("p99_latency_ms")))
    query = (per_minute.writeStream.outputMode("update").format("memory").queryName("per_minute")
             .option("checkpointLocation", str(work / "checkpoint")).start())
    try:
        for piece in pieces:
            shutil.copy(piece, folder)
            query.processAllAvailable()
            total = spark.sql("SELECT sum(requests) FROM (SELECT window, api_name, max(requests) AS requests "
                              "FROM per_minute GROUP BY window, api_name)").first()[0]
            print(f"{piece.name} landed: {total} requests counted so far")
        time.sleep(5.5)  # the folder goes quiet: requests still open are emitted
        query.processAllAvailable()
        spark.sql("""SELECT window.start AS minute, api_name, max(requests) AS requests,
                            max(p99_latency_ms) AS p99_latency_ms
                     FROM per_minute GROUP BY window.start, api_name ORDER BY minute, requests DESC""").show(50, False)
    finally:
        query.stop()
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
