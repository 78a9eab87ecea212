"""What a stream's offset says of one file it has read (``stream.py``'s offsets hold one entry per
file, by path).

Owns an entry's keys: how many packets were consumed, the capture time of the last one, the
file's identity and checksums (``stream_copies`` tells renamed and compressed copies by them),
whether its cut last record was read (``tail``), and what the emit rule needs to decide rows
alike in every micro-batch: from which packet on the file was read beside another writer's
(``BY_TIME_FROM``) and how many packets had been read at the last flush (``FLUSHED``). What a
file is read as goes with it when it is renamed or compressed. Does not decide what to consume
(``stream.py``) nor which rows are new (``emit_rule.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..capture.summary import CaptureSummary, prefix_crc

BY_TIME_FROM = "by_time_from"  # from which packet on the file was read beside another writer's
FLUSHED = "flushed"  # how many of its packets had been read when the folder last went quiet


def file_entry(s: CaptureSummary, packets: int, last_ns: int | None, was: dict | None, finished: bool) -> dict:
    """The entry of file ``s`` consumed up to ``packets`` (``was``: its entry before, if any;
    ``last_ns``: the time of packet ``packets`` where that is not the file's end; ``finished``:
    its writer moved on from it, or left it alone, with its last record cut short)."""
    # last_ns: the capture time of the last packet consumed (its session's end so far); not
    # known where availableNow stops short of the file's end
    whole = packets == s.packets
    entry = {
        "first_ns": s.first_ns or 0,
        "packets": packets,
        "last_ns": (s.last_ns or 0) if whole else last_ns,
        "first_crc": s.first_crc,
        "crc": s.prefix_crc if whole else prefix_crc(s.path, packets),
    }
    # The record its end cut short is read too: it stays cut. In a file that shrank after it
    # was read, it was read whole before: not again.
    shrank = was is not None and was["first_ns"] == entry["first_ns"] and packets < was["packets"]
    if whole and (finished or (shrank and not s.complete)):
        entry["tail"] = True
    return entry


def carry(entry: dict, prior: Mapping, read_before: int, beside_others: bool) -> None:
    """Into ``entry``, what the same file's entry before (``prior``: of it, or of the file it is
    a copy of) says it was read as; from ``read_before`` on, beside another writer's, if it is now."""
    for key in (FLUSHED, BY_TIME_FROM):
        if key in prior:
            entry[key] = min(prior[key], entry["packets"])
    if beside_others and BY_TIME_FROM not in entry:
        entry[BY_TIME_FROM] = read_before


def flushed(files: dict) -> dict:
    """``files`` (an offset's) as read when the folder went quiet: their open rows given up."""
    return {path: {**entry, FLUSHED: entry["packets"]} for path, entry in files.items()}


def marks(entries: Mapping, paths: Iterable[str], key: str) -> dict[str, int]:
    """Per path of ``paths`` whose entry has it, the packet ``key`` names (``BY_TIME_FROM``, ``FLUSHED``)."""
    return {path: entries[path][key] for path in paths if key in entries.get(path, {})}
