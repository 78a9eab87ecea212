"""Where a copy of stream bytes differs from the copy already taken.

Owns comparing two copies of the same stream bytes and saying which span differs; `stream`
decides which bytes to compare (those it still holds) and what to do about a difference.
"""

from __future__ import annotations


def differing(new: bytes, new_at: int, old: bytes, old_at: int, lo: int, hi: int) -> tuple[int, int] | None:
    """The stream bytes [first, last + 1) that differ in [lo, hi) between ``new`` and ``old``
    (bytes at stream offsets ``new_at`` and ``old_at``); None when they are the same."""
    if hi <= lo:
        return None
    a, b = new[lo - new_at : hi - new_at], old[lo - old_at : hi - old_at]
    if a == b:
        return None
    first = next(i for i in range(len(a)) if a[i] != b[i])
    last = next(i for i in range(len(a) - 1, -1, -1) if a[i] != b[i])
    return lo + first, lo + last + 1


def widen(span: tuple[int, int] | None, more: tuple[int, int] | None) -> tuple[int, int] | None:
    """The smallest span covering both (either alone when the other is None)."""
    if span is None or more is None:
        return span or more
    return min(span[0], more[0]), max(span[1], more[1])
