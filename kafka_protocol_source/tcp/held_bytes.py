"""One direction's bytes held out of order: sorted, disjoint pieces past the delivered offset.

Owns the pieces, each (start, end, data, capture time, packet index) with ``data`` None for
bytes the snaplen cut (their packet index is then the tick they were cut at), and their byte
count: holding bytes where none are held yet (saying where they differ from bytes held),
letting a fuller copy's bytes replace cut ones, moving every piece when offset 0 moves, and
letting go of the first pieces once delivered. Does not own sequence numbers, the offset
delivered, or when a hole is given up on (``stream``).
"""

from __future__ import annotations

from bisect import bisect_right

from .copies import differing, widen


class HeldBytes:
    __slots__ = ("count", "pieces", "starts")

    def __init__(self) -> None:
        self.pieces: list[tuple] = []
        self.starts: list[int] = []  # each piece's start, for bisect
        self.count = 0  # bytes held (cut ones too)

    def insert(self, s: int, e: int, data: bytes | None, ts: int, index: int) -> tuple[int, int] | None:
        """Hold [s, e) where nothing is held yet; return the span where ``data`` differs from
        bytes already held (None: nowhere)."""
        starts, pieces = self.starts, self.pieces
        i = bisect_right(starts, s) - 1
        pos = s
        conflict = None
        if i >= 0 and pieces[i][1] > pos:
            held = pieces[i]
            if data is not None and held[2] is not None:
                conflict = differing(data, s, held[2], held[0], s, min(e, held[1]))
            pos = held[1]
        i += 1
        while pos < e:
            next_start = starts[i] if i < len(starts) else e
            if next_start > pos:
                stop = min(e, next_start)
                part = None if data is None else data[pos - s : stop - s]
                starts.insert(i, pos)
                pieces.insert(i, (pos, stop, part, ts, index))
                self.count += stop - pos
                i += 1
                pos = stop
            else:
                held = pieces[i]
                if data is not None and held[2] is not None:
                    conflict = widen(conflict, differing(data, s, held[2], held[0], pos, min(e, held[1])))
                pos = max(pos, held[1])
                i += 1
        return conflict

    def uncut(self, s: int, e: int) -> bool:
        """Cut bytes held in [s, e) give way to the bytes a fuller copy brings (held next);
        whether there were any."""
        starts, pieces = self.starts, self.pieces
        i = max(bisect_right(starts, s) - 1, 0)
        found = False
        while i < len(pieces) and pieces[i][0] < e:
            ps, pe, data, ts, index = pieces[i]
            if data is not None or pe <= s:
                i += 1
                continue
            rest = [(a, b, None, ts, index) for a, b in ((ps, s), (e, pe)) if a < b]
            pieces[i : i + 1] = rest
            starts[i : i + 1] = [a for a, *_ in rest]
            self.count -= min(pe, e) - max(ps, s)
            i += len(rest)
            found = True
        return found

    def shift(self, by: int) -> None:
        """Every piece moves ``by`` (offset 0 moved)."""
        self.pieces[:] = [(s + by, e + by, *rest) for s, e, *rest in self.pieces]
        self.starts[:] = [s + by for s in self.starts]

    def drop(self, n: int) -> None:
        """The first ``n`` pieces were delivered (their bytes are taken off ``count`` as each is)."""
        del self.pieces[:n]
        del self.starts[:n]

    def clear(self) -> None:
        self.pieces.clear()
        self.starts.clear()
        self.count = 0
