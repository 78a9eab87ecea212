"""How far a micro-batch reads files taken at the same time (one per interface, host or direction).

Files that overlap in time are read as one capture (``merge.in_time_order``), and a packet seen in
two of them is read once, from the copy that comes first in time. ``EmitRule`` tells which
micro-batch a row belongs to by the packet that completed it, counted per file. Say one file's
copy of a packet was consumed, and a later micro-batch reads another file's copy, captured a
little earlier. That copy now comes first. It completes the row again, in a file where it is new,
and the row is emitted twice. Writers of such files do not keep pace: each interface's tcpdump
flushes on its own.

So a micro-batch consumes the files of such a session only up to one capture time, the
*frontier*. It is the least time that every file still being written has reached, and that every
file this micro-batch leaves unread starts after. Every copy not yet consumed is then later than
every copy consumed, and never comes first. Files whose writers keep pace are read as far as
before.

Owns that frontier: which files bound it, which files a micro-batch takes together, how far each
may be read and which to re-read; also what follows from knowing each writer's rotation: files
a writer moved on from with a record cut short (``moved_on``), and packets that came too late to
keep in order (``late_packets``). Does not decide which files are one session
(``summary.sessions``), what to consume (``stream.py``), nor which rows are new (``emit_rule.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..capture.summary import CaptureSummary, packets_through, sessions

UNBOUNDED = 1 << 62
# How far a writer's next file may begin before its last one ended (its first packets stamped
# before the other's last ones): out-of-order writing at a rotation, not a second writer.
ROTATION_OVERLAP_NS = 1_000_000_000


def taken_at_once(summaries: list[CaptureSummary], tolerance_ns: int) -> list[list[list[CaptureSummary]]]:
    """The sessions whose files overlap in time, each as its writers' rotations (``writers``)."""
    found = []
    for group in sessions(summaries, tolerance_ns, overlapping=True):
        chains = writers(group, tolerance_ns)
        if len(chains) > 1:
            found.append(chains)
    return found


def writers(group: list[CaptureSummary], tolerance_ns: int) -> list[list[CaptureSummary]]:
    """One session's files as the rotations of their writers, each in the order it wrote them.
    A file follows a writer whose newest file ended before it began (within ``tolerance_ns``, or
    at most ``ROTATION_OVERLAP_NS`` after: packets written out of time order at the rotation, as
    ``-i any`` and capture queues write them; with the same link types) and whose name begins as
    its own does. Of several such writers it follows the one whose newest file's name shares the
    longest beginning with its own. Time
    alone cannot tell writers apart. When one tcpdump per direction rotates, both writers' files
    end before either's next file begins, and a writer's first file may hold one packet, older
    than the other's first. The names do tell them apart: ``in-01`` follows ``in-00``, not
    ``out-00``, and ``out-00`` follows no ``in-`` file. Files of one writer whose names begin
    differently are taken as two writers. That costs only waiting: the older stops bounding the
    frontier once it is taken as stopped (see ``frontier``)."""
    chains: list[list[CaptureSummary]] = []
    for s in sorted(group, key=lambda s: (s.first_ns or 0, s.path)):
        begins, name_at = s.first_ns or 0, len(os.path.dirname(s.path)) + 1
        before = [
            c
            for c in chains
            if -ROTATION_OVERLAP_NS <= begins - (c[-1].last_ns or 0) <= tolerance_ns
            and c[-1].linktypes == s.linktypes
            and _shared_start(c[-1].path, s.path) > name_at
        ]
        if before:
            max(before, key=lambda c: _shared_start(c[-1].path, s.path)).append(s)
        else:
            chains.append([s])
    return chains


def _shared_start(a: str, b: str) -> int:
    """How many characters two names begin with alike (``in-00``, ``in-01``: 4)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def frontier(
    chains: list[list[CaptureSummary]],
    admitted: set[str],
    consumed: Callable[[CaptureSummary], tuple[int, int | None]],
    writing: Callable[[CaptureSummary], bool],
) -> int:
    """The capture time up to which one session's files may be read in this micro-batch. It is
    bounded by the last packet of each chain's newest file while that is still being written
    (``writing``), and by each file with packets that this micro-batch does not read (not
    ``admitted``): by the time before its first such packet. ``consumed``: a file's packets
    consumed so far, and the time of the last of them (None: not known)."""
    bound = UNBOUNDED
    for chain in chains:
        for s in chain:
            packets, last_ns = consumed(s)
            if s.path not in admitted and packets < s.packets:
                bound = min(bound, last_ns if packets and last_ns else (s.first_ns or 0) - 1)
        newest = chain[-1]
        if newest.last_ns is not None and writing(newest):
            bound = min(bound, newest.last_ns)
    return bound


def together(admitted: list, grown: list, groups: list[list[list[CaptureSummary]]]) -> list:
    """``admitted`` (items of ``grown``: (first_ns, path, summary, ...), in that order), with every
    grown file of the same session that starts before one of them ends: a file left out would
    bound the frontier below what those hold, and a micro-batch that admits them again, first in
    line, would stop there again."""
    session_of = {s.path: n for n, chains in enumerate(groups) for chain in chains for s in chain}
    taken = {item[1] for item in admitted}
    out = list(admitted)
    changed = True
    while changed:
        changed = False
        ends: dict[int, int] = {}
        for item in out:
            n = session_of.get(item[1])
            if n is not None:
                ends[n] = max(ends.get(n, 0), item[2].last_ns or 0)
        for item in grown:
            n = session_of.get(item[1])
            if item[1] not in taken and n in ends and item[0] <= ends[n]:
                out.append(item)
                taken.add(item[1])
                changed = True
    out.sort()
    return out


def read_through(s: CaptureSummary, until_ns: int, before: int, packets: int) -> tuple[int, int | None]:
    """How many packets of ``s`` to have consumed when the frontier is ``until_ns``: at most
    ``packets``, and never fewer than were consumed ``before`` (where a writer came in late, with
    packets older than some already read); and the time of the last of them (None: not known)."""
    if s.last_ns is None or s.last_ns <= until_ns:
        return packets, s.last_ns if packets == s.packets else None
    n, last_ns = packets_through(s.path, until_ns)
    if n <= before:
        return before, None
    return (n, last_ns) if n <= packets else (packets, None)


def consumed_packets(files: dict, s: CaptureSummary) -> int:
    """How many packets of ``s`` an offset's ``files`` have consumed, counting a record its end
    cut short (``tail``) as one while the file still ends there: once the file has grown, that
    record is whole, and new (its rows come, after the cut record's)."""
    seen = files.get(s.path)
    if not seen or seen["first_ns"] != (s.first_ns or 0):
        return 0
    return seen["packets"] + (bool(seen.get("tail")) and s.packets == seen["packets"])


def reread(
    files: list[CaptureSummary], new: list[CaptureSummary], after: dict, was_ns: int | None, idle_ns: int
) -> tuple[list[CaptureSummary], list[CaptureSummary]]:
    """For a session taken at once in several places: the files to re-read (every one read so far
    with packets in the last ``idle_ns`` before the new packets, and before the session's end
    before: ``was_ns``), in the order of their first packets, and the files before them."""
    anchor = min(s.first_ns or 0 for s in new) if new else max(s.first_ns or 0 for s in files)
    from_ns = min(anchor, was_ns if was_ns is not None else 1 << 62) - idle_ns
    read = [s for s in files if consumed_packets(after, s) > 0 and (s.last_ns or 0) >= from_ns]
    order = sorted(read, key=lambda s: (s.first_ns or 0, s.path))  # (not by their ends: they grow)
    return order, [s for s in files if s not in read]


def late_packets(
    files: list[CaptureSummary], new: list[CaptureSummary], before: dict, one_writer: bool = False
) -> list[tuple[str, int]]:
    """(path, how many) for each of a session's files whose new packets are older than packets its
    other files had given ``before`` (a writer that began late, or held its packets past both
    timeouts): the frontier cannot keep those in order. Of ``one_writer``'s files, only one that
    landed after a later one (read before it, beginning after it) is late: its next file may begin
    a little before its last one ended (``ROTATION_OVERLAP_NS``), and that is read in order."""
    found = []
    for s in new:
        others = [o for o in files if o is not s and consumed_packets(before, o)]
        if one_writer and not any((o.first_ns or 0) > (s.first_ns or 0) for o in others):
            continue
        read_to = max((before[o.path].get("last_ns") or 0 for o in others), default=0)
        late = packets_through(s.path, read_to - 1)[0] - consumed_packets(before, s) if read_to else 0
        if late > 0:
            found.append((s.path, late))
    return found


def moved_on(summaries: list[CaptureSummary], tolerance_ns: int) -> set[str]:
    """The files that end in a record cut short and that their writer has moved on from (a later
    file of its rotation is here): tcpdump killed mid-write, then started again. The cut record
    stays cut, so a stream reads it, as a batch read does, with the row that says the file was
    truncated."""
    if all(s.complete for s in summaries):
        return set()
    found: set[str] = set()
    for group in sessions(summaries, tolerance_ns, overlapping=True):
        for chain in writers(group, tolerance_ns):
            found.update(s.path for s in chain[:-1] if not s.complete)
    return found
