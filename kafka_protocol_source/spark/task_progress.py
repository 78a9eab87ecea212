"""How far the tasks reading captures have got, told through files in a folder.

Spark says how many of a stage's tasks have finished, and nothing of those still running: on one
capture of a few hundred MB, read by a handful of tasks, that is nothing until near the end. With
the ``progressDir`` option, each task reading captures writes ``<stage>-<partition>.json`` there,
twice a second and when it ends: the bytes of capture files it has read, the rows it has given
and its view. ``stage_progress`` adds up a stage's files.

Owns the files' format and where they are. Does not own the progress line (``cli.progress``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..capture.read_meter import bytes_read

WRITE_EVERY_S = 0.5


@dataclass(frozen=True)
class StageRead:
    """What the tasks of a stage have read so far: bytes of capture files, rows, and the view."""

    bytes: int
    rows: int
    view: str
    tasks: int  # tasks that have written progress


def task_progress(directory: str, view: str, rows: Iterable, every_s: float = WRITE_EVERY_S) -> Iterator:
    """``rows``, passed through, while the task's progress file says how many and how many bytes
    of captures it has read to give them: written by a thread every ``every_s``, so that a read
    whose rows come late (a selective query, the connections view's at the end) shows its bytes
    going by, and when the rows end."""
    from pyspark import TaskContext  # noqa: PLC0415 - only a task has one

    task = TaskContext.get()
    name = f"{task.stageId()}-{task.partitionId()}.json" if task is not None else f"driver-{os.getpid()}.json"
    path = os.path.join(directory, name)
    start, count = bytes_read(), [0]
    stop = threading.Event()

    def write() -> None:
        _write(path, bytes_read() - start, count[0], view)

    def keep_writing() -> None:
        while not stop.wait(every_s):
            write()

    writer = threading.Thread(target=keep_writing, name="kafka-wire-task-progress", daemon=True)
    writer.start()
    try:
        for row in rows:
            count[0] += 1
            yield row
    finally:
        stop.set()
        writer.join()
        write()


def _write(path: str, read: int, rows: int, view: str) -> None:
    """Replace the file whole, so that a reader never sees half of it; a folder gone (the command
    ended) or full is not worth failing the task for."""
    try:
        with open(path + ".tmp", "w") as f:
            json.dump({"bytes": read, "rows": rows, "view": view}, f)
        os.replace(path + ".tmp", path)
    except OSError:
        pass


def stage_progress(directory: str, stage_id: int | str) -> StageRead | None:
    """What the tasks of stage ``stage_id`` have written, added up; None if none has. (``driver``:
    what reads outside a Spark task wrote.)"""
    total, rows, views, tasks = 0, 0, set(), 0
    prefix = f"{stage_id}-"
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".json")]
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(directory, name)) as f:
                state = json.load(f)
        except (OSError, ValueError):
            continue
        total += int(state.get("bytes", 0))
        rows += int(state.get("rows", 0))
        views.add(state.get("view", ""))
        tasks += 1
    if not tasks:
        return None
    return StageRead(total, rows, views.pop() if len(views) == 1 else "", tasks)
