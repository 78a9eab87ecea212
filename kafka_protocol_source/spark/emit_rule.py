"""Which rows of a stream's micro-batch are its own (``EmitRule``).

A micro-batch re-reads a tail of its capture session (what rebuilds the connections still
open), so it meets rows that earlier micro-batches emitted. The rule says, per row, whether this
micro-batch emits it: rows completed by packets it consumes first, and rows still open whose
request went stale during it. Owns that decision only: what the offsets and windows are comes
from ``stream.py``; reading, from ``partition_reader.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..framing.context import FILE_MASK, FILE_SHIFT

ANSWERED_LATE = (
    "answered after the idle timeout: an earlier micro-batch gave this request up and emitted it as unanswered"
)
SKIP, EMIT, LATE = 0, 1, 2  # EmitRule's verdicts


@dataclass(frozen=True)
class EmitRule:
    """Which rows of a re-read are a micro-batch's own: those completed by a packet past
    ``new_from`` (packets already consumed, per file; ``completed_at`` names the packet by the
    row's content, so every read that completes the row names the same one), and rows still
    open at the end whose request went stale (no answer for the idle timeout) during this
    micro-batch.

    A row completed in new packets that was open and stale at the session's end before
    (``previous_end_ns``), or open at all when the folder went quiet (``after_flush``), was given
    up then, as it stood: it is not emitted again, unless its response came since (``LATE``: the
    request went out as unanswered)."""

    new_from: dict
    stale_from_ns: int | None  # open rows with a first time in [stale_from_ns, stale_to_ns) are given up
    stale_to_ns: int | None
    after_flush: bool = False  # the micro-batch before gave up every open row (the folder was quiet)
    previous_end_ns: int | None = None  # capture time of the session's last packet read before

    def verdict(self, ex, paths) -> int:
        """``SKIP``: not this micro-batch's; ``EMIT``; ``LATE``: a request given up as unanswered
        before, answered since."""
        if ex.completed_at is not None:
            path = paths[ex.completed_at >> FILE_SHIFT]
            if (ex.completed_at & FILE_MASK) < self.new_from.get(path, 0):
                return SKIP
        if (
            self.after_flush
            and ex.request_packet is not None
            and ex.request_packet < self.new_from.get(ex.capture_file, 0)
        ):
            # its request was open at the flush, and was emitted then as unanswered
            answered = ex.completed_at is not None and ex.response_time is not None
            return LATE if answered else SKIP
        if ex.completed_at is not None:
            first_ns = _ns(ex.request_time or ex.response_time)
            if self.stale_from_ns is None or first_ns is None or first_ns >= self.stale_from_ns:
                return EMIT
            # given up at the session's end before, as it stood then
            answered_ns = _ns(ex.response_time) if ex.request_time is not None else None
            since = self.previous_end_ns
            # (completed in new packets, so answered since: at the same microsecond as the last packet read, too)
            return LATE if answered_ns is not None and since is not None and answered_ns >= since else SKIP
        if self.stale_to_ns is None:
            return SKIP
        first_ns = _ns(ex.request_time or ex.response_time)
        if first_ns is None:
            return EMIT
        stale = (self.stale_from_ns is None or first_ns >= self.stale_from_ns) and first_ns < self.stale_to_ns
        return EMIT if stale else SKIP


def _ns(when) -> int | None:
    return None if when is None else int(when.timestamp() * 1_000_000) * 1000
