"""What a capture file holds, from its records alone: link types, time span, packet count, and
checksums of its packets' bytes that tell a file under another name (``stream_copies``).

Owns the facts that decide which files are pieces of one capture session (rotated by
``tcpdump -G``/``-C`` or a ``dumpcap`` ring buffer, or taken at once in several places) and how
far a file still being written can be read: the packets that are complete so far. Does not
decode packets (``decode``).
"""

from __future__ import annotations

import os
import zlib
from contextlib import contextmanager
from dataclasses import dataclass

from .model import CaptureError, CaptureIssue
from .pcap import read_pcap_frames
from .pcapng import read_pcapng_frames
from .source import open_capture


@dataclass(frozen=True, slots=True)
class CaptureSummary:
    path: str
    container: str  # "pcap" or "pcapng"
    gzipped: bool
    linktypes: frozenset[int]
    first_ns: int | None  # time of the first packet (None: no packet, or no times recorded)
    last_ns: int | None
    packets: int  # whole packets: a record cut by the end of the file is not counted
    size: int  # file size when it was summarised
    complete: bool  # ends on a record boundary (nothing cut short)
    # A checksum of the first whole packet's bytes: with first_ns, the file's identity whatever its
    # name or compression (tcpdump -z gzip replaces a rotated file by its .gz); None: no packet
    first_crc: int | None = None
    # With ``digest``: a checksum of every whole packet's bytes in order (see ``prefix_crc``)
    prefix_crc: int | None = None


def summarize(path: str, digest: bool = False) -> CaptureSummary | None:
    """The summary of a capture file, or None when it is not a pcap/pcapng capture (or unreadable);
    ``digest``: with its ``prefix_crc`` (every packet's bytes are read for it)."""
    try:
        size = os.path.getsize(path)
        with _frames(path) as (read, fmt, frames):
            linktypes, first, last, packets, complete = set(), None, None, 0, True
            pending = None  # the newest packet's time, taken once it is known whole
            first_crc = None
            crc = crc_before = 0  # the prefix checksum, with and without the last record read
            for frame in frames:
                if isinstance(frame, CaptureIssue):
                    if frame.kind == "truncated_file":
                        complete = False
                        if frame.packet_index < packets:  # what survived of the record it cut was handed over
                            pending = None  # its time is not a whole packet's: not the file's end so far
                            crc = crc_before
                        packets = min(packets, frame.packet_index)  # the record it cut is not whole
                    continue
                first, last = _widened(first, last, pending)
                _, _, pending, linktype, data, _ = frame
                if digest:
                    crc_before, crc = crc, zlib.crc32(data, crc)
                if not packets:
                    first_crc = zlib.crc32(data)
                linktypes.add(linktype)
                packets += 1
            first, last = _widened(first, last, pending)
            if read.failure is not None:  # ended by a bad or unreadable stream, maybe on a record boundary
                complete = False
    except (CaptureError, OSError):
        return None
    first_crc = first_crc if packets else None  # (the first record was cut short)
    prefix = crc if digest and packets else None
    return CaptureSummary(
        path, fmt.container, fmt.gzipped, frozenset(linktypes), first, last, packets, size, complete, first_crc, prefix
    )


def first_identity(path: str, look: int = 1000) -> tuple[int, int] | None:
    """``(first_ns, first_crc)`` as ``summarize`` gives them, from the first ``look`` records at
    most (None: no packet with a time there, or not a capture)."""
    first_crc = None
    try:
        with _frames(path) as (_, _, frames):
            for n, frame in enumerate(frames):
                if n >= look:
                    break
                if isinstance(frame, CaptureIssue):
                    continue
                if first_crc is None:
                    first_crc = zlib.crc32(frame[4])
                if frame[2]:
                    return frame[2], first_crc
    except (CaptureError, OSError):
        return None
    return None


def prefix_crc(path: str, packets: int) -> int | None:
    """A checksum of the bytes of a file's first ``packets`` packets, in order (None: it has not
    that many whole ones, or is no capture): two files with the same are the same packets."""
    crc = crc_before = n = 0
    try:
        with _frames(path) as (_, _, frames):
            for frame in frames:
                if isinstance(frame, CaptureIssue):
                    if frame.kind == "truncated_file":
                        if frame.packet_index < n:  # the record it cut was handed over: not a whole packet
                            n, crc = n - 1, crc_before
                        break
                    continue
                if n == packets:
                    return crc
                crc_before, crc, n = crc, zlib.crc32(frame[4], crc), n + 1
    except (CaptureError, OSError):
        return None
    return crc if n == packets else None


def packets_through(path: str, until_ns: int) -> tuple[int, int | None]:
    """How many of a file's first whole packets were all captured by ``until_ns``, and the latest
    of their times (None: none has one): how far a file may be read while another, taken at the
    same time, has not been written past ``until_ns`` yet."""
    n, last, pending = 0, None, None  # pending: the newest packet's time, counted once it is known whole
    try:
        with _frames(path) as (_, _, frames):
            for frame in frames:
                if isinstance(frame, CaptureIssue):
                    if frame.kind == "truncated_file":
                        if pending is not None and frame.packet_index <= n:
                            pending = None  # what survived of the record it cut was handed over
                        break
                    continue
                if pending is not None:
                    n, last = n + 1, _widened(last, last, pending)[1]
                    pending = None
                if frame[2] and frame[2] > until_ns:
                    break
                pending = frame[2] or 0
    except (CaptureError, OSError):
        return 0, None
    if pending is not None:
        n, last = n + 1, _widened(last, last, pending)[1]
    return n, last


def first_packet_ns(path: str) -> int | None:
    """The capture time of a file's first packet (``first_identity``'s): where
    ``merge.in_time_order`` opens it."""
    first = first_identity(path)
    return first[0] if first is not None else None


@contextmanager
def _frames(path: str):
    """(the read, the format, the records) of a capture file, open while the block runs."""
    with open_capture(path) as (read, fmt, head):
        yield read, fmt, read_pcap_frames(read, head) if fmt.container == "pcap" else read_pcapng_frames(read, head)


def _widened(first: int | None, last: int | None, ts: int | None) -> tuple[int | None, int | None]:
    """The time span (first, last) taking in ``ts`` (None or 0: a packet without a time)."""
    if not ts:
        return first, last
    return (ts if first is None else min(first, ts)), (ts if last is None else max(last, ts))


def sessions(
    summaries: list[CaptureSummary], tolerance_ns: int, overlapping: bool = True
) -> list[list[CaptureSummary]]:
    """Group files into capture sessions, each in the order of its first packets: files that
    overlap in time (one per interface, per host or per direction: whatever their link types,
    read as one capture by ``merge.in_time_order``), and chains of files each starting where the
    ones before it ended (within ``tolerance_ns``, never before), with link types one of them had.
    ``overlapping=False``: chains only, a file that overlaps one stands alone.

    Files without packets or times stand alone. Order comes from the captures' own times, not
    from names or modification times.
    """
    timed = sorted((s for s in summaries if s.first_ns is not None), key=lambda s: (s.first_ns, s.last_ns, s.path))
    chains: list[_Chain] = []
    for summary in timed:
        # Every session it overlaps, and the one it follows on from, are one with it.
        takers = [c for c in chains if c.overlaps(summary)] if overlapping else []
        takers += [c for c in chains if c not in takers and c.follows(summary, tolerance_ns)][:1]
        if not takers:
            chains.append(_Chain(summary))
            continue
        first = takers[0]
        for other in takers[1:]:
            first.absorb(other)
            chains.remove(other)
        first.add(summary)
    untimed = [[s] for s in summaries if s.first_ns is None]
    return [chain.files for chain in chains] + untimed


class _Chain:
    """A session being grouped: its files, the link types they have, and where it ends so far."""

    def __init__(self, first: CaptureSummary) -> None:
        self.files: list[CaptureSummary] = []
        self.linktypes: set[frozenset[int]] = set()
        self.last_ns = 0
        self.add(first)

    def add(self, summary: CaptureSummary) -> None:
        self.files.append(summary)
        self.linktypes.add(summary.linktypes)
        self.last_ns = max(self.last_ns, summary.last_ns or 0)

    def absorb(self, other: _Chain) -> None:
        """Take in another session's files (in the order of their first packets)."""
        for summary in other.files:
            self.add(summary)
        self.files.sort(key=lambda s: (s.first_ns or 0, s.last_ns or 0, s.path))

    def overlaps(self, summary: CaptureSummary) -> bool:
        assert summary.first_ns is not None, "only timed files are grouped"
        return summary.first_ns < self.last_ns

    def follows(self, summary: CaptureSummary, tolerance_ns: int) -> bool:
        """Whether ``summary`` starts where this session ended (within ``tolerance_ns``), with
        link types one of its files has."""
        assert summary.first_ns is not None, "only timed files are grouped"
        return 0 <= summary.first_ns - self.last_ns <= tolerance_ns and summary.linktypes in self.linktypes
