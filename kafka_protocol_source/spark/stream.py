"""``spark.readStream.format("kafka-wire")``: follow a capture directory as rotated files land.

The offset is, per file, how many whole packets have been consumed (and the time of its first
packet, so that a ring buffer reusing a name is a new file), plus the capture time of the last
packet consumed: deterministic JSON computed from the files alone, so ``latestOffset`` and
``partitions`` give the same answer for the same folder, and a restart from the checkpoint
re-plans exactly the same micro-batch. Files are remembered by path, so one copied in with an
old modification time is read too (files modified ``maxFileAge`` before the newest are ignored),
and by their packets (``stream_copies``), so one renamed or compressed after it was read
(``tcpdump -z gzip``) is read on from where it was (``copy_of``), not again.

A micro-batch re-reads, for each capture session with new packets, a tail of the session long
enough to rebuild every connection still open (the files holding the last ``idleTimeout`` of
capture time before the session's new packets, and before its end at the micro-batch before),
and emits only the rows that complete in the new packets: a response arriving, a connection
closing, bytes skipped. A request still unanswered when the new packets end is held (the next
micro-batch re-reads it) until it has waited ``idleTimeout`` of the session's capture time, or
the folder has had no new packet for ``quietTimeout`` of wall-clock time (from the first look
that found nothing new); then it is emitted once, as unanswered (its error says which), and its
answer, if one comes later, as the exchange again, saying so (``ANSWERED_LATE``), or, once the
re-read no longer reaches back to the request, as a response whose request is missing (in a
session of several writers, by a rule every micro-batch applies alike: ``EmitRule.answer_wait_ns``).
Staleness is each session's own: the offset keeps, per file, the time of the last packet
consumed. So every exchange is emitted once, in the micro-batch where it completes, across
restarts too. Where it completes is told by its content (``completed_at``: the
packet whose bytes completed it), not by when a read got to it: a re-read that joins a
connection mid-stream frames its bytes later than the read before did, and a response whose
request lies before the re-read is paired by the read before. A file being written is read
up to its last whole packet and again as it grows. Files taken at once in several places (one capture
per interface, host or direction, each rotated) are one session, read as their merge, each only
up to the capture time every writer has reached (``stream_frontier``). A records row whose topic
id its re-read does not name takes the name the session's earlier files give (``naming_pass.earlier_names``); one
given only later stays null. What the folder holds, and when it was written, comes from
``stream_folder``.
"""

from __future__ import annotations

import math
import os
import time
from functools import partial

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxFiles, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ..capture.summary import CaptureSummary, sessions
from .emit_rule import ORPHAN_WAIT_NS, EmitRule, given_up
from .offset_entry import BY_TIME_FROM, FLUSHED, carry, file_entry, flushed, marks
from .options import ReadOptions
from .partition_reader import MAX_SPLITS_PER_FILE, CapturePartition, PartitionReader
from .stream_copies import copy_of_present, entry_identity, file_identity, newest, original_of, present, with_copies
from .stream_folder import OTHER, WatchedFolder, other
from .stream_frontier import (
    consumed_packets,
    frontier,
    late_packets,
    moved_on,
    read_through,
    reread,
    taken_at_once,
    together,
    writers,
)

_LATE = (
    "came after the files taken beside it had been read past their capture time (a file that landed after a "
    "later one of its writer, a writer that began late, or one that held its packets longer than quietTimeout "
    "and idleTimeout): exchanges they carry may come out twice, or a request apart from its response"
)
QUIET = -1  # end_ns of an offset taken when the folder was quiet: every open row is given up


class KafkaWireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = options
        self.schema = schema
        self.max_files = options.max_files_per_trigger
        self.max_bytes = options.max_bytes_per_trigger
        self.min_age_ns, self.max_age_ns = options.min_file_age_ns, options.max_file_age_ns
        self.idle_ns, self.quiet_ns = options.idle_timeout_ns, options.quiet_timeout_ns
        self.folder = WatchedFolder(options, self.min_age_ns, self.max_age_ns)
        self._target: dict | None = None  # availableNow: nothing past what was there at the start
        # The files of the folder's sessions taken at once in several places, as last planned.
        self._beside_others: set[str] = set()
        self._idle_since_ns: int | None = None  # the first look since the last that found new packets

    # -- offsets ----------------------------------------------------------------------

    def initialOffset(self) -> dict:
        return {"files": {}, "end_ns": 0}

    def getDefaultReadLimit(self):
        if self.max_files:
            return ReadMaxFiles(self.max_files)
        if self.max_bytes:
            return ReadMaxBytes(self.max_bytes)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {path: s.packets for path, s in self._available().items()}
        # A run reads what is there, so the folder is quiet by its files' modification times (this
        # reader saw none change yet): a run over a capture that ended then gives up what is open
        # at its end, as a batch read does; one over files still being written does not.
        if self.folder.written:
            self.folder.changed_ns = max(modified for _, modified, _ in self.folder.written.values())

    def latestOffset(self, start: dict, limit=None) -> dict:
        available = self._available()
        if self._target is not None:
            available = {p: s for p, s in available.items() if p in self._target}
        consumed, gone = start["files"], start.get("gone", {})
        grown, copies, read_before, waiting = [], {}, {}, set()
        finished = moved_on(list(available.values()), self._tolerance()) | self._left_cut(available)
        for path, s in available.items():
            limit_packets = s.packets if self._target is None else min(s.packets, self._target[path])
            seen = consumed.get(path)
            if seen and seen["first_ns"] == (s.first_ns or 0):
                before = seen["packets"]
            elif (original := original_of(path, s, consumed, gone)) is not None:
                # A file read before under another name: renamed, or compressed (tcpdump -z gzip)
                if original[0] != path and self._still_there(original[0], original[1], available):
                    waiting.add(path)
                    continue  # the original is still there and read on: the copy waits
                copies[path] = {**original[1], "copy_of": original[0]}
                before = original[1]["packets"]
            elif copy_of_present(path, s, available) is not None:
                waiting.add(path)
                continue  # another file holds these packets and more: it is read, this one waits
            else:
                before = 0
            tail_left = path in finished and limit_packets == s.packets and not (seen or {}).get("tail")
            read_before[path] = before
            if limit_packets > before or limit_packets < before or tail_left:  # grown, or cut short (truncated)
                grown.append((s.first_ns or 0, path, s, limit_packets))
        grown.sort()
        # (a copy that waits for its original writes nothing the frontier should wait for)
        writing = {p: s for p, s in available.items() if p not in waiting}
        grown, last_of = self._at_frontier(self._admit(grown, limit), grown, writing, consumed)
        # A file read before and hidden now (younger than minFileAge again as it grows, past
        # maxFileAge) keeps what was consumed of it, or it would be read again from its start;
        # a file that is gone (a ring buffer's, or one renamed) is kept among the last ``GONE_KEPT``
        # gone, for a copy of it that may still come.
        files = {p: dict(v) for p, v in consumed.items() if p in available or os.path.exists(p)}
        files.update(copies)
        for _, path, s, packets in grown:
            was = consumed.get(path)
            entry = file_entry(s, packets, last_of.get(path), was, path in finished)
            prior = copies.get(path) or (was if was is not None and was["first_ns"] == entry["first_ns"] else {})
            carry(entry, prior, read_before[path], path in self._beside_others)
            files[path] = {**entry, "copy_of": copies[path]["copy_of"]} if path in copies else entry
        for path in self._beside_others & files.keys():  # from here on, its rows are read beside another writer's
            files[path].setdefault(BY_TIME_FROM, files[path]["packets"])
        end_ns = max([start["end_ns"]] + [s.last_ns or 0 for _, _, s, _ in grown])
        if grown:
            self._idle_since_ns = None
        elif self._idle_since_ns is None:
            self._idle_since_ns = time.time_ns()
        if not grown and start["end_ns"] != QUIET and files and self._quiet():
            end_ns = QUIET  # nothing new for a while: give up what is still open
            files = flushed(files)  # (remembered, for the responses a later micro-batch would decide by time)
        offset = {"files": dict(sorted(files.items())), "end_ns": end_ns}
        gone_now = {p: v for p, v in {**gone, **consumed}.items() if p not in files and v.get("crc") is not None}
        still_gone = newest(gone_now)
        if still_gone:
            offset["gone"] = still_gone
        return offset

    def _at_frontier(
        self, admitted: list, grown: list, available: dict[str, CaptureSummary], consumed: dict
    ) -> tuple[list, dict[str, int]]:
        """``admitted`` (of ``grown``) with the files of each session taken at once in several
        places admitted together, each read only up to the session's frontier
        (``stream_frontier``); and, per file cut short by it, the time of the last packet read."""
        # Quiet (an availableNow run: by the files' modification times): every writer has stopped.
        # Then no writer bounds the frontier, but files a micro-batch leaves unread
        # (maxFilesPerTrigger) still do. An availableNow run over files still being written reads
        # them only to the frontier, as a micro-batch does: scheduled runs, each after the writers'
        # next files land, read a packet seen on two interfaces once.
        settled = self._quiet()
        groups = taken_at_once(list(available.values()), self._tolerance())
        self._beside_others = {s.path for chains in groups for chain in chains for s in chain}
        if not groups:
            return admitted, {}
        admitted = together(admitted, grown, groups)
        paths = {item[1] for item in admitted}

        def consumed_of(s: CaptureSummary) -> tuple[int, int | None]:
            seen = consumed.get(s.path)
            if not seen or seen["first_ns"] != (s.first_ns or 0):
                return 0, None
            return seen["packets"], seen.get("last_ns")

        until: dict[str, int] = {}
        for chains in groups:
            end = max(s.last_ns or 0 for chain in chains for s in chain)
            writing = _not_writing if settled else partial(self._writing, session_end_ns=end)
            bound = frontier(chains, paths, consumed_of, writing)
            until.update((s.path, bound) for chain in chains for s in chain)
        out, last_of = [], {}
        for first_ns, path, s, packets in admitted:
            if path in until:
                before = consumed_of(s)[0]
                packets, last_ns = read_through(s, until[path], before, packets)
                if packets == before < s.packets:
                    continue  # nothing of it up to the frontier that was not read before
                if last_ns is not None:
                    last_of[path] = last_ns
            out.append((first_ns, path, s, packets))
        return out, last_of

    def _writing(self, s: CaptureSummary, session_end_ns: int) -> bool:
        """Whether a writer's newest file may still grow: it was written within ``quietTimeout``,
        or the session's other files have not yet gone ``idleTimeout`` of capture time past its
        last packet. tcpdump without ``-U`` holds a quiet interface's packets until its buffer
        fills, often for minutes; taken as stopped, that writer's packets would come in after
        newer ones were read, and its requests and responses would come apart."""
        written = self.folder.written.get(s.path)
        if written is not None and not self._left_alone(written[2], time.time_ns()):
            return True
        return s.last_ns is not None and session_end_ns - s.last_ns < self.idle_ns

    def _left_cut(self, available: dict[str, CaptureSummary]) -> set[str]:
        """Files that end in a record cut short and have not been written for ``quietTimeout``
        (by their modification time, which a fresh availableNow run also knows): a capture that
        ended there, tcpdump killed and not started again. Read to their end, as a batch read
        does. A tcpdump without ``-U`` holding a quiet link's packets longer than that can leave
        one: its record's rest is then read when it comes, after the cut record's row."""
        now = time.time_ns()
        return {
            path
            for path, s in available.items()
            if not s.complete and (written := self.folder.written.get(path)) and self._left_alone(written[1], now)
        }

    def _left_alone(self, written_ns: int, now_ns: int) -> bool:
        """Whether what was last written at ``written_ns`` has not been written for ``quietTimeout``."""
        return now_ns - written_ns >= self.quiet_ns

    def _tolerance(self) -> int:
        return self.options.stitch_tolerance_ns if self.options.stitch else -1

    def _still_there(self, path: str, entry: dict, available: dict[str, CaptureSummary]) -> bool:
        """Whether the file an offset's ``entry`` says was read is still at ``path`` (not another
        file renamed to that name since, as logrotate does)."""
        s = available.get(path) or (self.folder.summary(path) if os.path.exists(path) else None)
        return s is not None and file_identity(s) == entry_identity(entry)

    def _admit(self, grown: list, limit) -> list:
        if isinstance(limit, ReadAllAvailable) or limit is None:
            return grown
        max_files = limit.max_files if isinstance(limit, ReadMaxFiles) else self.max_files
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else self.max_bytes
        admitted: list = []
        size = 0
        for item in grown:
            if max_files is not None and len(admitted) >= max_files:
                break
            if max_bytes is not None and admitted and size + item[2].size > max_bytes:
                break
            admitted.append(item)
            size += item[2].size
        return admitted

    # -- micro-batches ----------------------------------------------------------------

    def partitions(self, start: dict, end: dict):
        after = present(end["files"], self.folder.every_capture())  # (a file gzipped or rotated since it was planned)
        before = with_copies(start["files"], start.get("gone", {}), after)
        summaries = [self.folder.summary(p) or other(p, 0) for p in after if os.path.exists(p)]
        parts = []
        for path, was in before.items():
            now = after.get(path)
            if now is not None and now["first_ns"] == was["first_ns"] and now["packets"] < was["packets"]:
                parts.append(
                    CapturePartition(
                        (path,),
                        notice=f"the file shrank from {was['packets']} to "
                        f"{now['packets']} packets after they were read "
                        "(truncated or overwritten in place); not read again",
                    )
                )
        tolerance = self._tolerance()
        for chain in sessions(summaries, tolerance, overlapping=True):
            new = [s for s in chain if consumed_packets(after, s) > consumed_packets(before, s)]
            flush = end["end_ns"] == QUIET and start["end_ns"] != QUIET and chain[0].container != OTHER
            if not new and not flush:
                continue
            was_ns, now_ns = _session_end(chain, before), _session_end(chain, after)
            by_time_from = marks(after, (s.path for s in chain), BY_TIME_FROM)
            # Where responses are decided by time, a re-read goes back far enough that every one
            # still waiting is read again, and that the micro-batch deciding one holds its request,
            # unless that came more than ``apart_ns`` before it (``EmitRule.answer_wait_ns``).
            apart_ns = max(self.idle_ns, ORPHAN_WAIT_NS) if by_time_from else None
            reach_ns = apart_ns + ORPHAN_WAIT_NS if apart_ns is not None else self.idle_ns
            by_writer = writers(chain, tolerance)
            late = late_packets(chain, new, before, one_writer=len(by_writer) == 1)
            # taken at once in several places, or one writer's file that landed after a later one
            if len(by_writer) > 1 or late:
                # Staleness runs on the writer read least far: one read further (the frontier
                # lifted for it) must not make the others' open requests look given up.
                was_ns, now_ns = _least_end(by_writer, before), _least_end(by_writer, after)
                files, earlier_files = reread(chain, new, after, was_ns, reach_ns)
                parts += [CapturePartition((path,), notice=f"{n} packets of this file {_LATE}") for path, n in late]
            else:
                first_new = chain.index(new[0]) if new else len(chain) - 1
                last_new = chain.index(new[-1]) if new else len(chain) - 1
                tail_from = self._tail_start(chain, first_new, was_ns, reach_ns)
                files, earlier_files = chain[tail_from : last_new + 1], chain[:tail_from]
            paths = tuple(s.path for s in files)
            limits = {s.path: consumed_packets(after, s) for s in files}
            new_from = {s.path: consumed_packets(before, s) for s in files}
            after_flush = start["end_ns"] == QUIET
            emit: EmitRule | None = EmitRule(
                new_from,
                *self._stale_window(was_ns, now_ns, end["end_ns"] == QUIET, after_flush),
                previous_end_ns=None if after_flush else was_ns,
                by_time_from=by_time_from,
                ended_ns=was_ns,
                end_ns=(1 << 62) if end["end_ns"] == QUIET else now_ns,
                flushed_from=marks(before, (s.path for s in files), FLUSHED),
                given_up=given_up(end["end_ns"] == QUIET, self._target is not None),
                answer_wait_ns=apart_ns,
            )
            if chain[0].container == OTHER:
                emit = None  # read once, whole: every row it gives is new
            size = sum(s.size for s in files)
            count = min(MAX_SPLITS_PER_FILE, max(1, math.ceil(size / self.options.split_size)))
            earlier = tuple((s.path, consumed_packets(after, s)) for s in earlier_files)
            read_of = {p: (after[p]["first_ns"], after[p].get("first_crc"), after[p].get("crc")) for p in paths}
            parts += [
                CapturePartition(paths, i, count, limits, emit, earlier=earlier, read_of=read_of) for i in range(count)
            ]
        return parts

    def _tail_start(self, chain: list[CaptureSummary], first_new: int, was_ns: int | None, back_ns: int) -> int:
        """The first file to re-read: enough to hold every request that can still be open (one
        not stale at the session's end before: ``was_ns``), ``back_ns`` before it."""
        start = first_new
        from_ns = min(chain[first_new].first_ns or 0, was_ns if was_ns is not None else 1 << 62) - back_ns
        while start > 0 and (chain[start - 1].last_ns or 0) >= from_ns:
            start -= 1
        return max(0, min(start, first_new - 1)) if first_new > 0 else 0

    def _stale_window(
        self, was_ns: int | None, now_ns: int | None, quiet: bool, after_flush: bool
    ) -> tuple[int | None, int | None]:
        """Which open rows of a session this micro-batch gives up, by first time: those that went
        stale between the session's end before (``was_ns``) and now (``now_ns``); all, once the
        folder is ``quiet``. Right after that (``after_flush``) every one stale now: those open
        then were given up then (``EmitRule.flushed_from`` tells them), and the rest are new."""
        since = None if after_flush or was_ns is None else was_ns - self.idle_ns
        if quiet:
            return since, (1 << 62)
        return since, None if now_ns is None else now_ns - self.idle_ns

    def read(self, partition):
        yield from PartitionReader(self.options, self.schema, self.options.apis).read(partition)

    def _available(self) -> dict[str, CaptureSummary]:
        return self.folder.captures(self._left_alone)

    def _quiet(self) -> bool:
        """Whether the folder has had no new packet for ``quietTimeout``. A stream counts from its
        first look that found nothing new: the time its own micro-batches took is not time the
        writers were seen quiet (a first micro-batch of 11 s gave up what was open at 5 s). A run
        of availableNow counts from the files' modification times."""
        since = self.folder.changed_ns
        if self._target is None:
            since = max(since, self._idle_since_ns if self._idle_since_ns is not None else time.time_ns())
        return self._left_alone(since, time.time_ns())


def _not_writing(s: CaptureSummary) -> bool:
    """No writer is writing: the folder is quiet."""
    return False


def _least_end(chains: list[list[CaptureSummary]], files: dict) -> int | None:
    """The least of the writers' session ends (``_session_end``) that ``files`` has consumed."""
    ends = [end for chain in chains if (end := _session_end(chain, files)) is not None]
    return min(ends) if ends else None


def _session_end(chain: list[CaptureSummary], files: dict) -> int | None:
    """The capture time of the last packet of ``chain`` that ``files`` (an offset's) has consumed;
    None before any. A file whose offset does not say (a checkpoint from before it said, or an
    availableNow stop inside it) counts by its first packet: a lower bound."""
    ends = []
    for s in chain:
        seen = files.get(s.path)
        if consumed_packets(files, s) == 0 or seen is None:
            continue
        if seen["packets"] == s.packets:
            ends.append(s.last_ns or 0)
        else:
            ends.append(seen.get("last_ns") or s.first_ns or 0)
    return max(ends) if ends else None
