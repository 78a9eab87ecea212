"""The topic names one slice of a split read of the records or lag view needs from the others.

Such a slice reads only its own connections' records (the index pass gives it their runs), but
its Fetches and Produces may name topics by id only, and the Metadata response that names them
may have crossed any connection. So when the slice meets an id its own connections did not
name, it is handed the ``name_changes`` of one read of every connection that decodes the
topic-naming apis only (no other bodies, no rows), and learns them as one read of the whole
capture would have (``views.topic_names.learning_as_read``).

That read is done at most once per worker process and capture: a Python worker runs its tasks
one after another, and the later slices of the same capture take it from here. What teaches a
name (``keeps``: the read mode, a requested api version) is the caller's to say.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace

from ..pipeline import CaptureOptions, read_with
from ..views.topic_names import TOPIC_NAMING_APIS, NameChange, name_changes

_KEPT = 4  # captures whose changes a worker keeps (each is a list of the names a capture teaches)
_changes: OrderedDict[Hashable, list[NameChange]] = OrderedDict()


def naming_changes(
    paths: Sequence[str], options: CaptureOptions, keeps: Callable[[object], bool], keeps_key: Hashable
) -> list[NameChange]:
    """The name changes of a read of every connection of ``paths`` with ``options`` (its apis
    narrowed to the naming ones, its runs and limits dropped), of the exchanges ``keeps`` keeps.
    ``keeps_key`` tells apart predicates that keep differently."""
    apis = TOPIC_NAMING_APIS if options.apis is None else options.apis & TOPIC_NAMING_APIS
    if not apis:  # the apis option leaves none: one read of the whole capture learns nothing either
        return []
    naming = replace(options, apis=apis, record_runs={}, packet_limits={}, issues_here=False)
    key = (tuple(paths), tuple(_identity(p) for p in paths), repr(naming), keeps_key)
    found = _changes.get(key)
    if found is None:
        found = _changes[key] = name_changes(ex for ex in read_with(list(paths), naming) if keeps(ex))
        while len(_changes) > _KEPT:
            _changes.popitem(last=False)
    else:
        _changes.move_to_end(key)
    return found


def _identity(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


def kept() -> int:
    """How many captures' changes this worker keeps."""
    return len(_changes)


def forget() -> None:
    """Forget every capture's changes (what a new worker process knows)."""
    _changes.clear()
