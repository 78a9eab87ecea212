"""The progress line: what it says for a stage, and when the printer shows and wipes it."""

from __future__ import annotations

import io

from kafka_protocol_source.cli.progress import InputSize, ProgressPrinter, StageProgress, progress_line
from kafka_protocol_source.spark.task_progress import StageRead

SIZE = InputSize(files=2, bytes=40_000_000, partitions=8)


def test_a_scan_of_the_captures_says_bytes_rows_rate_and_eta():
    line = progress_line(StageProgress(3, tasks=8, completed=2, rows=5918), SIZE, elapsed_s=10)
    assert line == "reading 2 files: ~10.0 MB of 40.0 MB, 5,918 rows, 2/8 tasks, 1.0 MB/s, ETA 0:30"


def test_before_the_first_task_ends_no_rate_is_guessed():
    line = progress_line(StageProgress(3, tasks=8, completed=0, rows=0), SIZE, elapsed_s=4)
    assert line == "reading 2 files: ~0 B of 40.0 MB, 0/8 tasks, 0:04 elapsed"


def test_what_the_tasks_told_is_read_so_far_whatever_the_tasks_count():
    # 9 files in 2 tasks: Spark's task count says nothing of the bytes; the tasks' own counts do
    told = StageRead(bytes=12_000_000, rows=5_000, view="exchanges", tasks=2)
    line = progress_line(StageProgress(3, tasks=2, completed=0, rows=None), SIZE, elapsed_s=10, told=told)
    assert line == "reading 2 files: 12.0 MB of 40.0 MB, 5,000 exchanges, 0/2 tasks, 1.2 MB/s, ETA 0:23"
    records = StageRead(bytes=50_000_000, rows=70, view="records", tasks=8)  # names read twice
    line = progress_line(StageProgress(4, tasks=8, completed=8, rows=None), SIZE, elapsed_s=8, told=records)
    assert line == "reading 2 files: 40.0 MB of 40.0 MB, 70 records, 8/8 tasks, 5.0 MB/s, ETA 0:00"


def test_other_stages_show_tasks_only():
    assert (
        progress_line(StageProgress(5, tasks=2, completed=1, rows=None), SIZE, 61) == "stage 5: 1/2 tasks, 1:01 elapsed"
    )


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_line_shows_after_a_second_and_is_wiped_when_idle_or_paused():
    stream, clock = io.StringIO(), Clock()
    printer = ProgressPrinter(stream, lambda: [], SIZE, clock=clock, told=lambda stage_id: None)
    stage = StageProgress(1, tasks=8, completed=4, rows=None)
    printer.draw([stage])
    assert stream.getvalue() == ""  # a short stage prints nothing
    clock.now += 2
    printer.draw([stage])
    assert stream.getvalue().startswith("\r\x1b[Kreading 2 files: ~20.0 MB of 40.0 MB, 4/8 tasks")
    printer.draw([])
    assert stream.getvalue().endswith("\r\x1b[K")  # no stage running: wiped
    clock.now += 1
    printer.draw([stage])
    with printer.paused():
        assert stream.getvalue().endswith("\r\x1b[K")
        written = stream.getvalue()
        printer.draw([stage])
        assert stream.getvalue() == written  # nothing drawn while results are written
