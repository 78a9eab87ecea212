"""What the tasks reading captures tell the progress line: bytes read and rows given, as they go.

The CLI's line sums these files (``stage_progress``); without them it knows nothing of a task
until it ends. A task's count of bytes is what it read of the capture files: one file read whole,
or the slices of one split by connection, which together read it once.
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
from pathlib import Path

from kafka_protocol_source import read_capture
from kafka_protocol_source.capture.read_meter import bytes_read
from kafka_protocol_source.pipeline import CaptureOptions
from kafka_protocol_source.spark import naming_pass, shared_names
from kafka_protocol_source.spark.task_progress import StageRead, stage_progress, task_progress

from .bigcapture import replicate

SAMPLE = "sample_captures/tansu_confluent_kafka_all_codecs.pcap"
LARGER = "sample_captures/mock_confluent_kafka_all_codecs_any_sll2.pcap"


def _told(directory) -> StageRead:
    stages = {name.split("-")[0] for name in os.listdir(directory) if name.endswith(".json")}
    assert len(stages) == 1, stages
    told = stage_progress(str(directory), int(stages.pop()))
    assert told is not None
    return told


def test_a_task_tells_how_far_it_has_read_before_it_ends(tmp_path):
    big = tmp_path / "big.pcap"
    replicate(Path(SAMPLE), big, size_bytes=3 << 20)  # more than one read of the file
    progress = tmp_path / "progress"
    progress.mkdir()
    rows = task_progress(str(progress), "exchanges", read_capture(big), every_s=0.01)
    taken = list(itertools.islice(rows, 70))
    time.sleep(0.2)  # the rows stop coming for a while: the file says how far they got
    assert [n for n in os.listdir(progress)] == [f"driver-{os.getpid()}.json"]  # outside a Spark task
    told = stage_progress(str(progress), "driver")
    assert told is not None and told.view == "exchanges" and told.tasks == 1
    assert told.rows == len(taken)
    assert 0 < told.bytes < os.path.getsize(big)
    rest = list(rows)
    told = stage_progress(str(progress), "driver")
    assert told is not None and told.rows == len(taken) + len(rest)
    assert told.bytes >= os.path.getsize(big)


def test_the_tasks_of_a_read_tell_its_bytes_and_rows(spark, tmp_path):
    folder = tmp_path / "captures"
    folder.mkdir()
    for name in (SAMPLE, LARGER):
        shutil.copy(name, folder)
    progress = tmp_path / "progress"
    progress.mkdir()
    df = spark.read.format("kafka-wire").option("progressDir", str(progress)).load(str(folder))
    count = df.count()
    told = _told(progress)
    assert (told.rows, told.view, told.tasks) == (count, "exchanges", 2)
    size = sum(os.path.getsize(folder / name) for name in os.listdir(folder))
    assert size <= told.bytes < size + 64  # (the format's magic is read again to open a file)


def test_slices_of_a_split_capture_read_it_once_between_them(spark, tmp_path):
    progress = tmp_path / "progress"
    progress.mkdir()
    df = (
        spark.read.format("kafka-wire")
        .option("progressDir", str(progress))
        .option("splitSize", str(os.path.getsize(LARGER) // 3))
        .option("view", "records")
        .load(LARGER)
    )
    count = df.count()
    told = _told(progress)
    assert (told.rows, told.view, told.tasks) == (count, "records", 3)
    assert told.bytes < 1.2 * os.path.getsize(LARGER)


def test_a_look_for_topic_names_is_not_counted_as_reading(monkeypatch):
    """A read of the records or a typed view may read its capture ahead for topic names, and a
    stream's the files before its tail: bytes read twice, or no part of its input, that would
    bring the line to 100% early."""
    monkeypatch.setattr(shared_names, "load", lambda key, partial=False: None)  # (nothing from other workers)
    monkeypatch.setattr(shared_names, "store", lambda key, names, partial=False: None)
    naming_pass.forget()
    before = bytes_read()
    ahead = naming_pass.naming_read([SAMPLE], CaptureOptions(), lambda ex: True, "test")
    assert ahead.get("an id the capture names nowhere") is None and ahead.finished and ahead.read > 0
    assert naming_pass.earlier_names([(SAMPLE, 1 << 30)], CaptureOptions(), lambda ex: True, "test") != {}
    assert bytes_read() == before
    naming_pass.forget()
    for _ in read_capture(SAMPLE):
        pass
    assert bytes_read() >= before + os.path.getsize(SAMPLE)  # (the read itself is counted)
