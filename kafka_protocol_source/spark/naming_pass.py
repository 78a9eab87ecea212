"""The topic names a read of the records or lag view needs from beyond what it has read.

Its Fetches and Produces may name topics by id only, and the response that names an id may
come on a connection the reader does not read (one slice of a split read reads only its own
connections' records), or much later in the capture than the reader can hold rows for. Then
(``views.topic_names``) the reader is handed the ``first_names`` of one read of every connection
that decodes the topic-naming apis only (no other bodies, no rows).

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
from ..views.topic_names import TOPIC_NAMING_APIS, first_names

_KEPT = 4  # captures whose names a worker keeps
_names: OrderedDict[Hashable, dict[str, str]] = OrderedDict()


def naming_read(
    paths: Sequence[str], options: CaptureOptions, keeps: Callable[[object], bool], keeps_key: Hashable
) -> dict[str, str]:
    """The first names of topic ids in a read of every connection of ``paths`` with ``options`` (its apis
    narrowed to the naming ones, its runs dropped: a slice's runs are its own connections; its
    packet limits kept: they bound what the read may see), of the exchanges ``keeps`` keeps.
    ``keeps_key`` tells apart predicates that keep differently."""
    apis = TOPIC_NAMING_APIS if options.apis is None else options.apis & TOPIC_NAMING_APIS
    if not apis:  # the apis option leaves none: one read of the whole capture learns nothing either
        return {}
    naming = replace(options, apis=apis, record_runs={}, issues_here=False)
    key = (tuple(paths), tuple(_identity(p) for p in paths), repr(naming), keeps_key)
    found = _names.get(key)
    if found is None:
        found = _names[key] = first_names(ex for ex in read_with(list(paths), naming) if keeps(ex))
        while len(_names) > _KEPT:
            _names.popitem(last=False)
    else:
        _names.move_to_end(key)
    return found


def _identity(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


def kept() -> int:
    """How many captures' names this worker keeps."""
    return len(_names)


def forget() -> None:
    """Forget every capture's names (what a new worker process knows)."""
    _names.clear()
