"""The topic names a read of the records, lag or a typed view needs from beyond what it has read.

Its Fetches and Produces may name topics by id only, and the response that names an id may
come on a connection the reader does not read (one slice of a split read reads only its own
connections' records), or much later in the capture than the reader can hold rows for. Then
(``views.topic_names``) the reader is handed the first names of one read of every connection
that decodes the topic-naming apis only (no other bodies, no rows).

That read goes only as far as the ids asked about need (``NamesAhead``): where a client refreshed
its metadata early in the capture, the start of the capture names every id. A Python worker runs
its tasks one after another and makes it at most once per capture: its later slices take it up
where it was left. A read that went to the end (an id the capture names nowhere) is shared with
the machine's other workers and later queries (``SharedRead``, ``shared_names``). What teaches a
name (``keeps``: the read mode, a requested api version) is the caller's to say.

A stream's micro-batch re-reads only a tail of its capture session (what rebuilds the
connections still open), so the Metadata that named an id an hour ago is behind it. It looks
back instead (``earlier_names``): at the session's newest files before its tail, each read on
its own and kept by the worker and shared with the machine's other workers (``shared_names``),
so that a long-running stream, or one restarted, reads each file once for names (a naming
response cut in two by a file's rotation is lost to this look, not to the tail's read).

Neither read counts in the bytes a task tells the progress line it has read (``uncounted``):
they go over bytes the read itself reads, or that are not its input.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace

from ..capture.read_meter import uncounted
from ..pipeline import CaptureOptions, read_with
from ..views.topic_names import TOPIC_NAMING_APIS, NameLookup, NamesAhead, first_names
from . import shared_names

_KEPT = 4  # captures whose names a worker keeps
LOOK_BACK_FILES = 512  # a stream's earlier files read for names: the newest of the session's
_KEPT_FILES = 2 * LOOK_BACK_FILES  # earlier files whose names a worker keeps (two streams' worth)
_names: OrderedDict[Hashable, SharedRead] = OrderedDict()
_file_names: OrderedDict[Hashable, dict[str, str]] = OrderedDict()


def naming_read(
    paths: Sequence[str], options: CaptureOptions, keeps: Callable[[object], bool], keeps_key: Hashable
) -> NameLookup:
    """The first names of topic ids in a read of every connection of ``paths`` with ``options`` (its apis
    narrowed to the naming ones, its runs dropped: a slice's runs are its own connections; its
    packet limits kept: they bound what the read may see), of the exchanges ``keeps`` keeps, read
    as far as the ids asked about need. ``keeps_key`` tells apart predicates that keep differently."""
    naming = _naming_options(options)
    if naming is None:  # the apis option leaves none: one read of the whole capture learns nothing either
        return {}
    key = _key(list(paths), naming, keeps_key)
    ahead = _names.get(key)
    if ahead is None or ahead.broken:
        ahead = _names[key] = SharedRead(
            key, lambda: NamesAhead(ex for ex in uncounted(read_with(list(paths), naming)) if keeps(ex))
        )
        while len(_names) > _KEPT:
            _names.popitem(last=False)
    else:
        _names.move_to_end(key)
    return ahead


class SharedRead:
    """A worker's naming read of one capture that takes what another worker of the machine
    finished (``shared_names``): an id not named yet is read for while no other worker reads the
    capture, once it is known that none has read it to the end."""

    def __init__(self, key: Hashable, start: Callable[[], NamesAhead]):
        self._key, self._start = key, start
        self._ahead: NamesAhead | None = None
        self._finished = shared_names.load(key)  # every name of the capture (None: not known yet)
        self._partial: dict[str, str] = {}  # first names another worker's read found before it stopped
        self.read = 0  # exchanges this worker read for names

    @property
    def broken(self) -> bool:
        return self._ahead is not None and self._ahead.broken

    @property
    def finished(self) -> bool:
        """Whether every name the capture gives is known here."""
        return self._finished is not None

    def get(self, topic_id: str) -> str | None:
        if self._finished is not None:
            return self._finished.get(topic_id)
        if topic_id in self._partial:
            return self._partial[topic_id]
        ahead = self._ahead
        if ahead is not None and not ahead.broken and topic_id in ahead.by_id:
            return ahead.by_id[topic_id]
        with shared_names.reading(self._key):
            self._finished = shared_names.load(self._key)
            if self._finished is not None:
                self._ahead = None
                return self._finished.get(topic_id)
            # a read that stopped early found the first names of the ids it found: the worker that
            # waited for it takes them rather than read the same start of the capture again
            self._partial = shared_names.load(self._key, partial=True) or {}
            if topic_id in self._partial:
                return self._partial[topic_id]
            if ahead is None or ahead.broken:
                ahead = self._ahead = self._start()
            before = ahead.read
            try:
                name = ahead.get(topic_id)
            finally:
                self.read += ahead.read - before
            if ahead.finished:
                self._finished, self._ahead = ahead.by_id, None
                shared_names.store(self._key, ahead.by_id)
            elif len(ahead.by_id) > len(self._partial):
                shared_names.store(self._key, ahead.by_id, partial=True)
            return name


def earlier_names(
    files: Sequence[tuple[str, int]], options: CaptureOptions, keeps: Callable[[object], bool], keeps_key: Hashable
) -> dict[str, str]:
    """The names of topic ids in the newest ``LOOK_BACK_FILES`` of ``files`` ((path, packets to
    read), in capture order), each file read alone as ``naming_read`` reads a capture. (Kafka
    never renames an id: which file names it first does not matter.)"""
    naming = _naming_options(options)
    names: dict[str, str] = {}
    if naming is None:
        return names
    for path, packets in reversed(files[-LOOK_BACK_FILES:]):
        try:
            alone = replace(naming, packet_limits={path: packets})
            found = _file_first_names(path, alone, keeps, keeps_key)
        except OSError:  # rotated away since the micro-batch was planned: it names nothing now
            continue
        for topic_id, name in found.items():
            names.setdefault(topic_id, name)
    return names


def _naming_options(options: CaptureOptions) -> CaptureOptions | None:
    apis = TOPIC_NAMING_APIS if options.apis is None else options.apis & TOPIC_NAMING_APIS
    if not apis:
        return None
    return replace(options, apis=apis, record_runs={}, issues_here=False, unknown_api_kept=frozenset())


def _file_first_names(
    path: str, naming: CaptureOptions, keeps: Callable[[object], bool], keeps_key: Hashable
) -> dict[str, str]:
    key = _key([path], naming, keeps_key)
    found = _file_names.get(key)
    if found is None:
        found = shared_names.load(key)
        if found is None:
            found = first_names(ex for ex in uncounted(read_with([path], naming)) if keeps(ex))
            shared_names.store(key, found)
        _file_names[key] = found
        while len(_file_names) > _KEPT_FILES:
            _file_names.popitem(last=False)
    else:
        _file_names.move_to_end(key)
    return found


def _key(paths: list[str], naming: CaptureOptions, keeps_key: Hashable) -> Hashable:
    return (tuple(paths), tuple(_identity(p) for p in paths), repr(naming), keeps_key)


def _identity(path: str) -> tuple[int, ...]:
    """What tells one content of ``path`` from another: a file rewritten in place with its size and
    modification time kept (``cp -p``, ``rsync -t``) has another change time."""
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns


def reads() -> list[SharedRead]:
    """The naming reads of whole captures this worker keeps, the newest last."""
    return list(_names.values())


def kept() -> int:
    """How many captures' (and a stream's earlier files') names this worker keeps."""
    return len(_names) + len(_file_names)


def forget() -> None:
    """Forget every capture's names (what a new worker process knows)."""
    _names.clear()
    _file_names.clear()
