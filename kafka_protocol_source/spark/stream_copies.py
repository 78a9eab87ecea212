"""Which files of a streamed folder are a file read before, under another name.

``tcpdump -G 60 -z gzip`` replaces each rotated file by its ``.gz`` once it closes; logrotate
renames ``k.pcap`` to ``k.pcap.1``; an operator moves a file aside and back. The packets are
the same, and a stream that remembered files by path alone read them again. A file is known by
its first packet (time and a checksum of its bytes) and, to be a copy, must hold the very packets
read of the other up to where it was read (``prefix_crc``): two captures of different traffic
that begin with the same packet (one per interface) are not copies.

Owns that decision over an offset's file entries (``{"first_ns", "packets", "crc", ...}`` per
path) and the summaries of the folder's files. Does not own the offsets (``stream``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..capture.summary import CaptureSummary, first_identity, prefix_crc, summarize

GONE_KEPT = 64  # gone files an offset remembers, so that a copy of one (renamed, gzipped) is not read again


def identity(first_ns: int | None, first_crc: int | None) -> tuple[int, int] | None:
    return None if first_crc is None else (first_ns or 0, first_crc)


def file_identity(s: CaptureSummary) -> tuple[int, int] | None:
    """A file's identity: its first packet's time and checksum (None: no packet)."""
    return identity(s.first_ns, s.first_crc)


def entry_identity(entry: Mapping) -> tuple[int, int] | None:
    """The identity of the file an offset's entry says was read (None: an entry from before
    entries kept it)."""
    return identity(entry["first_ns"], entry.get("first_crc"))


def holds(path: str, s: CaptureSummary, entry: Mapping) -> bool:
    """Whether the file at ``path`` (``s``) holds the packets ``entry`` says were read of a file."""
    key = entry_identity(entry)
    if entry.get("crc") is None or key is None or file_identity(s) != key:
        return False
    n = entry["packets"]
    if s.packets < n:
        return False
    crc = s.prefix_crc if s.packets == n else prefix_crc(path, n)
    return crc == entry["crc"]


def original_of(path: str, s: CaptureSummary, consumed: Mapping, gone: Mapping) -> tuple[str, dict] | None:
    """The file read before (its path and entry, from the offset or its gone files) that the file
    at ``path`` is a copy of, the one read furthest; None: it is a file of its own."""
    key = file_identity(s)
    if key is None:
        return None
    best = None
    for other, entry in (*gone.items(), *consumed.items()):
        if other == path and other in consumed:
            continue  # its own entry, of another file that had this path
        if entry_identity(entry) != key:
            continue
        if (best is None or entry["packets"] > best[1]["packets"]) and holds(path, s, entry):
            best = (other, entry)
    return best


def copy_of_present(path: str, s: CaptureSummary, available: Mapping[str, CaptureSummary]) -> str | None:
    """Another file present now, not read yet, that holds every packet of ``path`` and is preferred
    to it (more packets; then the name that sorts first): ``path`` waits while it is there."""
    key = file_identity(s)
    if key is None:
        return None
    for other, t in available.items():
        if other == path or file_identity(t) != key:
            continue
        if t.packets < s.packets or (t.packets == s.packets and other > path):
            continue  # this one is preferred: the other waits for it instead
        crc = t.prefix_crc if t.packets == s.packets else prefix_crc(other, s.packets)
        if crc is not None and crc == s.prefix_crc:
            return other
    return None


def present(files: dict, folder: Mapping[str, CaptureSummary]) -> dict:
    """``files`` (an offset's) with each path that is gone now, or holds another file (logrotate
    moved it on, copytruncate emptied it), replaced by the file of the ``folder`` that holds what
    it says was read (``copy_of``): where a file planned to be read went since."""
    out, claimed = {}, set()
    moved = []
    for path, entry in files.items():
        now = folder.get(path)
        if now is not None and file_identity(now) == entry_identity(entry):
            out[path] = entry
            claimed.add(path)
        else:
            moved.append((path, entry))
    for path, entry in moved:
        copy = next((p for p, s in sorted(folder.items()) if p not in claimed and holds(p, s, entry)), None)
        if copy is None:
            out[path] = entry
        else:
            out[copy] = {**entry, "copy_of": path}
            claimed.add(copy)
    return out


def with_copies(before: dict, gone: Mapping, after: dict) -> dict:
    """``before`` (an offset's files) with what it had read of each file that ``after`` takes for
    a copy of one it had read (``copy_of``), wherever ``before`` had it (a rotation can move a
    file on twice between two offsets): the copy's packets up to there are not read again."""
    out = dict(before)
    read: dict = {}  # identity -> the entry of the file read furthest
    for entry in (*gone.values(), *before.values()):
        key = entry_identity(entry)
        if key is not None and (key not in read or read[key]["packets"] < entry["packets"]):
            read[key] = entry
    for path, entry in after.items():
        mine = before.get(path)
        if entry.get("copy_of") is None or (mine is not None and mine["first_ns"] == entry["first_ns"]):
            continue  # no copy, or one already read under this name
        was = read.get(entry_identity(entry))
        if was is not None and was["packets"] <= entry["packets"]:
            out[path] = {k: v for k, v in was.items() if k != "copy_of"}
    return out


def newest(gone: dict) -> dict:
    """The ``GONE_KEPT`` entries of gone files with the latest first packets, in path order."""
    kept = sorted(gone.items(), key=lambda item: (item[1]["first_ns"], item[0]))[-GONE_KEPT:]
    return dict(sorted(kept))


def moved_to(path: str, read: tuple[int, int | None, int | None], packets: int) -> str | None:
    """Where the file planned to be read at ``path`` went, if it is gone or another file is
    there now and it was compressed or renamed beside itself (``k.pcap.gz``, ``k.pcap.1``): a
    file of the same folder whose name starts with its name, holding its first ``packets``
    packets (``read``: its first packet's time and checksum, and their checksum). None: it is
    still there, or nowhere to be found."""
    first_ns, first_crc, crc = read
    folder, name = os.path.split(path)
    if crc is None or first_crc is None:
        return None
    if os.path.exists(path) and first_identity(path) == (first_ns, first_crc):
        return None
    try:
        names = sorted(n for n in os.listdir(folder or ".") if n.startswith(name) and n != name)
    except OSError:
        return None
    for n in names:
        candidate = os.path.join(folder, n)
        s = summarize(candidate)
        if s is not None and file_identity(s) == (first_ns, first_crc):
            if prefix_crc(candidate, packets) == crc:
                return candidate
    return None
