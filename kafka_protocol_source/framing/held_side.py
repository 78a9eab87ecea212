"""What one side of a connection sent while it is not yet known to be Kafka, as detection reads it.

Owns holding a side's first bytes (up to ``BACKLOG_LIMIT``) at their places in the stream: where
its packets ended, and the holes its gaps left, with stand-in bytes. A snaplen cuts most frames
of a connection, and their sizes are all that says where the next begin, so bytes after a gap
keep their place. ``HOLE`` stands for a missing byte: text to a client id the cut ran into, and a
size no frame has (0x7e7e7e7e: 2 GB), so no frame starts in a hole. Does not own deciding which
side is the client (``connection``) or what a frame start is (``sniff``).
"""

from __future__ import annotations

import struct
from bisect import bisect_right

BACKLOG_LIMIT = 1 << 20  # bytes held while deciding whether a flow on an unknown port is Kafka
BIG_HOLE = 1 << 16  # a gap longer than this: the side is looked at afresh (see leave_hole)
HOLE = b"~"
_SIZE = struct.Struct(">i")


class HeldSide:
    __slots__ = ("chunk_ends", "data", "hole_ends", "holes")

    def __init__(self) -> None:
        self.data = bytearray()
        self.chunk_ends: set[int] = set()  # positions in data where a packet's bytes end
        self.holes: list[tuple[int, int]] = []  # [start, end) in data the capture does not have
        self.hole_ends: list[int] = []  # their ends, in order (for bisection)

    def add(self, data: bytes) -> None:
        if len(self.data) < BACKLOG_LIMIT:
            if self.data:
                self.chunk_ends.add(len(self.data))
            self.data += data[: BACKLOG_LIMIT - len(self.data)]

    def leave_hole(self, length: int, reason: str) -> bool:
        """Stand-in bytes for ``length`` bytes a gap left out; False for a gap longer than
        ``BIG_HOLE``: no frame size that small spans it, its stand-ins would fill what is held,
        and the side is to be looked at afresh after it, as from a late start."""
        if length > BIG_HOLE:
            return False
        length = min(length, BACKLOG_LIMIT - len(self.data))
        if length <= 0:
            return True
        at = len(self.data)
        if at and reason != "snaplen_cut":  # the packet before a lost one ended here
            self.chunk_ends.add(at)
        self.holes.append((at, at + length))
        self.hole_ends.append(at + length)
        self.data += HOLE * length
        return True

    @property
    def full(self) -> bool:
        return len(self.data) >= BACKLOG_LIMIT

    def captured(self, limit: int = BACKLOG_LIMIT) -> bytes:
        """The first ``limit`` bytes the capture has, the holes left out (b"" when a gap said the
        side sent some, but none were captured)."""
        data = self.data
        if not self.holes:
            return bytes(data[:limit])
        at, kept = 0, bytearray()
        for start, stop in [*self.holes, (len(data), len(data))]:
            kept += data[at : min(start, at + limit - len(kept))]
            if len(kept) >= limit:
                break
            at = stop
        return bytes(kept)

    def boundary(self, position: int) -> bool:
        """Whether a packet's bytes end at ``position``."""
        return position == len(self.data) or position in self.chunk_ends

    def past_hole(self, position: int) -> int:
        """``position``, or the end of the hole it is in."""
        hole = self._next_hole(position)
        return hole[1] if hole is not None and hole[0] <= position else position

    def runs_into_hole(self, position: int) -> bool:
        """Whether the frame whose size is at ``position`` has bytes in a hole."""
        if len(self.data) - position < 4:
            return False
        hole = self._next_hole(position)
        return hole is not None and hole[0] < position + 4 + _SIZE.unpack_from(self.data, position)[0]

    def _next_hole(self, position: int) -> tuple[int, int] | None:
        """The first hole that ends after ``position``."""
        i = bisect_right(self.hole_ends, position)
        return self.holes[i] if i < len(self.holes) else None
