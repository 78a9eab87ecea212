"""Our own progress line on stderr while Spark reads captures: files, bytes, rows, rate, ETA.

Spark tells how many tasks of a stage are done (``SparkContext.statusTracker``) and, per
finished task, how many rows it read; the file listing tells the input's size. A stage with as
many tasks as the read has partitions is taken to be reading the captures, and its share of
finished tasks to be its share of the bytes (partitions are files, or equal slices of one).
The line appears only after a second (short reads print nothing), is redrawn twice a second in
place, and is wiped when the command writes its results.
"""

from __future__ import annotations

import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

SHOW_AFTER_S = 1.0
REDRAW_EVERY_S = 0.5
_CLEAR = "\r\x1b[K"


@dataclass(frozen=True)
class StageProgress:
    stage_id: int
    tasks: int
    completed: int
    rows: int | None  # rows read by the stage's finished tasks, when Spark says


@dataclass(frozen=True)
class InputSize:
    files: int
    bytes: int
    partitions: int  # tasks a scan of the captures has


def progress_line(stage: StageProgress, size: InputSize, elapsed_s: float) -> str:
    """One line for the busiest active stage, ``elapsed_s`` after it started: the time taken until
    a task has finished, then the rate and the time left."""
    done = f"{stage.completed}/{stage.tasks} tasks"
    rows = f", {stage.rows:,} rows" if stage.rows else ""
    if stage.tasks != size.partitions or not size.bytes:
        return f"stage {stage.stage_id}: {done}{rows}, {_duration(elapsed_s)} elapsed"
    files = f"{size.files} file{'' if size.files == 1 else 's'}"
    read = size.bytes * stage.completed / stage.tasks
    line = f"reading {files}: ~{_bytes(read)} of {_bytes(size.bytes)}{rows}, {done}"
    if not stage.completed or elapsed_s <= 0:
        return f"{line}, {_duration(elapsed_s)} elapsed"
    rate = read / elapsed_s
    return f"{line}, {_bytes(rate)}/s, ETA {_duration((size.bytes - read) / rate)}"


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def spark_stages(spark):
    """A function giving the active stages of ``spark``, busiest first."""
    sc = spark.sparkContext
    tracker = sc.statusTracker()

    def rows_read(stage_id: int) -> int | None:
        try:  # Spark's status store: internal, so optional
            return int(sc._jsc.sc().statusStore().lastStageAttempt(stage_id).inputRecords())
        except Exception:  # noqa: BLE001
            return None

    def active() -> list[StageProgress]:
        stages = []
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None and info.numTasks:
                stages.append(StageProgress(stage_id, info.numTasks, info.numCompletedTasks, rows_read(stage_id)))
        return sorted(stages, key=lambda s: (-s.tasks, s.stage_id))

    return active


class ProgressPrinter:
    """Redraws ``progress_line`` on ``stream`` from a thread until ``stop``."""

    def __init__(self, stream, active_stages, size: InputSize, clock=time.monotonic):
        self.stream, self.active_stages, self.size, self.clock = stream, active_stages, size, clock
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._paused = 0
        self._shown = False
        self._started: dict[int, float] = {}
        self._thread = threading.Thread(target=self._run, name="kafka-wire-progress", daemon=True)

    def start(self) -> ProgressPrinter:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        with self._lock:
            self._clear()

    @contextmanager
    def paused(self):
        """No progress line while the command writes to the terminal."""
        with self._lock:
            self._paused += 1
            self._clear()
        try:
            yield
        finally:
            with self._lock:
                self._paused -= 1

    def _run(self) -> None:
        while not self._stopped.wait(REDRAW_EVERY_S):
            try:
                stages = self.active_stages()
            except Exception:  # noqa: BLE001 - the session is stopping; progress is not worth an error
                return
            self.draw(stages)

    def draw(self, stages: list[StageProgress]) -> None:
        """Show the busiest of ``stages`` once it has run for SHOW_AFTER_S; no stages wipe the line."""
        now = self.clock()
        with self._lock:
            if self._paused:
                return
            if not stages:
                self._clear()
                return
            stage = stages[0]
            started = self._started.setdefault(stage.stage_id, now)
            if now - started < SHOW_AFTER_S:
                return
            width = shutil.get_terminal_size().columns - 1
            self.stream.write(_CLEAR + progress_line(stage, self.size, now - started)[:width])
            self.stream.flush()
            self._shown = True

    def _clear(self) -> None:
        if self._shown:
            self.stream.write(_CLEAR)
            self.stream.flush()
            self._shown = False


class NoProgress:
    def start(self) -> NoProgress:
        return self

    def stop(self) -> None:
        pass

    @contextmanager
    def paused(self):
        yield
