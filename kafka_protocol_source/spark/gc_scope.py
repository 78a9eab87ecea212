"""Keeping the garbage collector off the objects a task found already alive.

A Spark task keeps a batch's rows (the exchanges view: their encoded columns; other views: row
dicts) until the batch is built, so some of what it allocates outlives the young generations and
sets off full collections. Each walks the whole heap: the worker's pyspark and pyarrow modules
and the parsers and encoders built so far, none of which the task will free.
``long_lived_frozen`` moves what is alive when a read starts out of the collector's view
(``gc.freeze``) and gives it back when the read ends (``gc.unfreeze``), so those collections walk
only what the read made. Nothing is freed later than it would be without it, except cyclic
garbage among the frozen objects, which waits until the read ends.

It owns that scope only: it does not tune the collector's thresholds or collect by itself.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def long_lived_frozen() -> Iterator[None]:
    """Freeze what is alive now for the duration of the block. Overlapping blocks share one freeze,
    undone when the last ends; a process that had frozen objects itself is left as it is."""
    global _active, _ours
    with _lock:
        if _active == 0:
            _ours = gc.get_freeze_count() == 0
            if _ours:
                gc.freeze()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _ours:
                gc.unfreeze()
                _ours = False


_lock = threading.Lock()
_active = 0  # blocks under way
_ours = False  # whether the freeze now in place is theirs to undo
