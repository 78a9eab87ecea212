"""The files of one capture session as one stream of packets: what reading a session starts from.

Owns numbering (a packet's index in the session is its file's number shifted by ``FILE_SHIFT``,
plus its index in its file, so every stage can say which file a packet came from), per-file
packet limits and record runs, and a file that is gone or unreadable since the read was planned
(a ``corrupt_file`` issue where its packets would be). The order across files is
``merge.in_time_order``'s. Does not decide which files are one session (``summary.sessions``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from functools import partial

from .merge import Item, in_time_order
from .model import FILE_SHIFT, CaptureError, CaptureIssue, TcpSegment
from .reader import read_packets
from .runs import RecordRuns
from .summary import first_packet_ns


def session_packets(
    paths: Sequence[str],
    limits: Mapping[str, int] | None = None,
    runs: Mapping[str, RecordRuns] | None = None,
    skip: frozenset = frozenset(),
) -> Iterator[Item]:
    """The segments and issues of every file of ``paths`` but ``skip``, in capture-time order,
    numbered by their place in ``paths``; ``limits``: at most that many packets of a file;
    ``runs``: only those records of it."""
    limits, runs = limits or {}, runs or {}
    files = [(n, path) for n, path in enumerate(paths) if path not in skip]
    if len(files) == 1:
        n, path = files[0]
        return _file_packets(n, path, limits.get(path), runs.get(path))
    return in_time_order(
        [(first_packet_ns(p), partial(_file_packets, n, p, limits.get(p), runs.get(p))) for n, p in files]
    )


def _file_packets(number: int, path: str, limit: int | None, runs: RecordRuns | None) -> Iterator[Item]:
    """The segments and issues of one file of a session, their packet indices made the session's."""
    shift = number << FILE_SHIFT
    try:
        for item in read_packets(path, runs=runs):
            if limit is not None and item.packet_index >= limit:
                break
            if shift:
                index = item.packet_index + shift
                if isinstance(item, TcpSegment):
                    item = item._replace(packet_index=index)
                else:
                    item = replace(item, packet_index=index)
            yield item
    except (CaptureError, OSError) as e:  # gone, or unreadable, since the read was planned
        if limit is None or limit > 0:
            yield CaptureIssue(shift, 0, "corrupt_file", f"{os.path.basename(path)}: {e}")
