"""``DirectionFramer``'s fast paths (``feed``: a chunk that is exactly one whole frame, cut from
the chunk without the buffer; ``finish``: nothing pending) give the frames, and leave the state,
that the buffered paths do: for any stream of frames (some with implausible sizes) cut into any
chunks, with gaps, ended anywhere."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol_source.framing.sniff import CONFIRMED, MAYBE
from kafka_protocol_source.framing.splitter import DirectionFramer

MAX_FRAME = 64


def _looks_like_start(buf, pos, final, boundary) -> int:
    """A frame start is a size up to MAX_FRAME whose frame ends at a packet boundary."""
    if len(buf) - pos < 4:
        return MAYBE
    (size,) = struct.unpack_from(">i", buf, pos)
    if not 0 <= size <= MAX_FRAME:
        return 0
    end = pos + 4 + size
    if end > len(buf):
        return 0 if final else MAYBE
    return CONFIRMED if boundary(end) else 0


class BufferedOnly(DirectionFramer):
    """The framer with every chunk through the buffer, and its end through the pending path."""

    def feed(self, offset, data, ns, packet):
        return self._buffered(offset, data, ns, packet)

    def finish(self, why="the capture ended inside this frame"):
        return self._finish_pending(why)


def _state(framer: DirectionFramer) -> tuple:
    return (
        bytes(framer.buf),
        framer.pos,
        framer.base,
        framer.anchored,
        framer.in_sync,
        tuple(framer.times),
        framer.skip_start,
        framer.skip_reason,
        framer.scanned_to,
        frozenset(framer.chunk_starts),
    )


_whole = st.binary(max_size=40).map(lambda body: struct.pack(">i", len(body)) + body)
_frame = st.one_of(_whole, _whole, _whole, st.binary(min_size=1, max_size=12))  # or junk: no frame
# A stream of frames, and the events cutting it: ("chunk", length) or ("gap", length).
_events = st.lists(
    st.tuples(st.sampled_from(["chunk", "frame", "frame", "frame", "gap"]), st.integers(1, 60)), max_size=30
)


@settings(max_examples=300, deadline=None)
@given(frames=st.lists(_frame, max_size=20), events=_events, in_sync=st.booleans(), start=st.integers(0, 1 << 33))
def test_fast_path_matches_the_buffered_path(frames, events, in_sync, start):
    stream = b"".join(frames)
    ends = {0}
    for f in frames:
        ends.add(max(ends) + len(f))
    fast = DirectionFramer(_looks_like_start, MAX_FRAME, in_sync)
    slow = BufferedOnly(_looks_like_start, MAX_FRAME, in_sync)
    pos = 0
    for n, (kind, length) in enumerate(events):
        if pos >= len(stream):
            break
        if kind == "frame":  # up to the next frame end: the fast path's chunks
            length = min(e for e in ends if e > pos) - pos if max(ends) > pos else length
        length = min(length, len(stream) - pos)
        if kind == "gap":
            got = (fast.gap(start + pos, length, "missing", n), slow.gap(start + pos, length, "missing", n))
        else:
            chunk = stream[pos : pos + length]
            got = (fast.feed(start + pos, chunk, n, n), slow.feed(start + pos, chunk, n, n))
        assert got[0] == got[1]
        assert _state(fast) == _state(slow)
        pos += length
    assert fast.finish() == slow.finish()
    assert _state(fast) == _state(slow)
