"""Our own progress line on stderr while Spark reads captures: files, bytes, rows, rate, ETA.

Spark tells how many tasks of a stage are done (``SparkContext.statusTracker``); the file
listing tells the input's size. The tasks reading captures say themselves how many bytes they
have read and how many rows (exchanges, records) they gave, finished or not
(``spark.task_progress``, through the ``progressDir`` folder): a stage with such counts is a read
of the captures, and its line says how far it is. Without them, a stage with as many tasks as the
read has partitions is taken to be reading the captures, and its share of finished tasks to be its
share of the bytes (partitions are files, or equal slices of one), with the rows Spark counted for
the finished tasks. The line appears only after a second (short reads print nothing), is redrawn
twice a second in place, and is wiped when the command writes its results.
"""

from __future__ import annotations

import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (importing the spark package imports pyspark)
    from ..spark.task_progress import StageRead

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


def progress_line(stage: StageProgress, size: InputSize, elapsed_s: float, told: StageRead | None = None) -> str:
    """One line for the busiest active stage, ``elapsed_s`` after it started; ``told``: what its
    tasks said of their reading. The time taken until some bytes are known read, then the rate
    and the time left."""
    done = f"{stage.completed}/{stage.tasks} tasks"
    files = f"{size.files} file{'' if size.files == 1 else 's'}"
    rows = f", {stage.rows:,} rows" if stage.rows else ""
    if told is not None and size.bytes:
        # (opening a file reads its format's magic again: a few bytes over the input's size)
        read: float = min(told.bytes, size.bytes)
        estimate = ""
        rows = f", {told.rows:,} {told.view if told.view in _NAMED_ROWS else 'rows'}"
    elif stage.tasks == size.partitions and size.bytes:
        read, estimate = size.bytes * stage.completed / stage.tasks, "~"
    else:
        return f"stage {stage.stage_id}: {done}{rows}, {_duration(elapsed_s)} elapsed"
    line = f"reading {files}: {estimate}{_bytes(read)} of {_bytes(size.bytes)}{rows}, {done}"
    if not read or elapsed_s <= 0:
        return f"{line}, {_duration(elapsed_s)} elapsed"
    rate = read / elapsed_s
    return f"{line}, {_bytes(rate)}/s, ETA {_duration((size.bytes - read) / rate)}"


_NAMED_ROWS = frozenset({"exchanges", "records", "connections"})  # views whose rows the line names


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

    def __init__(self, stream, active_stages, size: InputSize, clock=time.monotonic, told=None):
        """``told(stage_id)``: what the stage's tasks said of their reading, or None."""
        self.stream, self.active_stages, self.size, self.clock = stream, active_stages, size, clock
        self.told = told or _nothing_told
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
            line = progress_line(stage, self.size, now - started, self.told(stage.stage_id))
            self.stream.write(_CLEAR + line[:width])
            self.stream.flush()
            self._shown = True

    def _clear(self) -> None:
        if self._shown:
            self.stream.write(_CLEAR)
            self.stream.flush()
            self._shown = False


def _nothing_told(_stage_id: int) -> None:
    return None


class NoProgress:
    def start(self) -> NoProgress:
        return self

    def stop(self) -> None:
        pass

    @contextmanager
    def paused(self):
        yield
