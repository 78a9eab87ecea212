"""spark.readStream follows a directory: each capture is read once, as it lands."""

import os
import shutil
import time

import pytest


def _land(src, directory, age_s: float = 30):
    target = directory / src.name
    shutil.copy(src, target)
    past = time.time() - age_s
    os.utime(target, (past, past))
    return target


@pytest.fixture
def stream_dir(tmp_path):
    d = tmp_path / "incoming"
    d.mkdir()
    return d


def test_new_files_are_read_once_in_order_of_arrival(spark, samples, stream_dir):
    first, second = sorted(samples.glob("*.pcap"))[:2]
    _land(first, stream_dir, age_s=60)
    query = (
        spark.readStream.format("kafka-wire")
        .option("minFileAge", "5")
        .load(str(stream_dir))
        .writeStream.format("memory")
        .queryName("landed")
        .outputMode("append")
        .start()
    )
    try:
        query.processAllAvailable()
        counts = {r[0]: r[1] for r in spark.sql("SELECT capture_file, count(*) FROM landed GROUP BY 1").collect()}
        assert list(counts) == [str(stream_dir / first.name)]
        _land(second, stream_dir, age_s=30)
        fresh = shutil.copy(second, stream_dir / "still-being-written.pcap")  # younger than minFileAge: not yet
        query.processAllAvailable()
        counts = {r[0]: r[1] for r in spark.sql("SELECT capture_file, count(*) FROM landed GROUP BY 1").collect()}
        assert set(counts) == {str(stream_dir / first.name), str(stream_dir / second.name)}
        assert str(fresh) not in counts
        query.processAllAvailable()  # nothing new: nothing read twice
        again = {r[0]: r[1] for r in spark.sql("SELECT capture_file, count(*) FROM landed GROUP BY 1").collect()}
        assert again == counts
    finally:
        query.stop()


def test_max_files_per_trigger_bounds_a_micro_batch(spark, samples, stream_dir):
    for src in sorted(samples.glob("*.pcap"))[:3]:
        _land(src, stream_dir)
    query = (
        spark.readStream.format("kafka-wire")
        .option("maxFilesPerTrigger", "1")
        .load(str(stream_dir))
        .writeStream.format("memory")
        .queryName("bounded")
        .outputMode("append")
        .start()
    )
    try:
        query.processAllAvailable()
        batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
        assert len(batches) == 3
        assert spark.sql("SELECT count(DISTINCT capture_file) FROM bounded").first()[0] == 3
    finally:
        query.stop()
