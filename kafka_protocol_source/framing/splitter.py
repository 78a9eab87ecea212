"""Cut one direction's byte stream into Kafka's int32 size-prefixed frames.

Owns buffering, the frame-size cap, capture times and packets per frame, and resynchronising:
a stream that starts mid-frame (capture started late) or resumes after a gap is scanned for the
next position where a frame plausibly starts, as judged by the caller's ``looks_like_start``
(see ``sniff``: a plausible header that the following bytes confirm). A candidate whose
confirmation needs bytes that have not arrived is waited for, unless a confirmed frame start
lies inside the span it claims: then the claim was bytes that only looked like a header, and
the framer moves on instead of stalling the direction. Every byte fed comes out in exactly one
``Frame``, ``Partial`` or ``Skipped``: skipped bytes and frames cut short are reported, never
spliced or dropped in silence.

A gap inside a frame whose size prefix was read (a snaplen-limited capture cuts nearly every
frame so; a lost packet) does not lose the framer its place: the frame ends where its size
says, so the bytes up to there are the rest of that frame (one ``Partial`` whose span covers
the gaps), and framing goes on in step after it. Only a gap that runs past the frame's end, or
one outside any frame, needs a resync.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, replace

from ..capture.model import later_packet
from .model import Frame, new_frame
from .sniff import CONFIRMED, MAYBE, AnswerAt, CutStart, StartCheck, first_confirmed

_SIZE = struct.Struct(">i")
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024  # larger claimed sizes are framing errors (the maxFrameSize option)
_COMPACT_AT = 1 << 16
_LOST = {  # what the tcp stage's gap reasons say
    "missing": "missing from the capture",
    "snaplen_cut": "cut off by the capture (its snaplen, or the file's end)",
    "overflow": "given up: more bytes out of order than the buffer holds",
}


@dataclass(frozen=True, slots=True)
class Skipped:
    """Bytes passed over while looking for a frame start, or (``captured`` False) never captured."""

    offset: int
    length: int
    first_ns: int | None
    first_packet: int | None
    reason: str
    captured: bool = True
    last_packet: int | None = None  # see ``Frame``; None when a gap or the end decided it, not bytes


@dataclass(frozen=True, slots=True)
class Partial:
    """A frame cut short: by a gap in the capture, or by the end of it."""

    payload: bytes  # the part present, without the size prefix when it was complete
    claimed_size: int | None
    offset: int
    first_ns: int | None
    first_packet: int | None
    reason: str
    span: int | None = None  # stream bytes it covers, gaps included, where more than the part present
    last_packet: int | None = None  # see ``Skipped``
    # The time of the packet that carried its last byte, where that packet was captured (with
    # the byte, or with its payload cut by the snaplen): the frame's end is then known.
    last_ns: int | None = None


class DirectionFramer:
    def __init__(
        self,
        looks_like_start: StartCheck,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        in_sync: bool = False,
        cut_start: CutStart | None = None,
        awaited: AnswerAt | None = None,
    ):
        """``cut_start``: whether a frame plausibly starts at a position though a gap cut the
        bytes that would confirm it (without it, such a frame is skipped while resyncing);
        ``awaited``: the correlation id of the frame that starts at a position, if a captured
        request waits for it (by its header alone)."""
        self.looks_like_start = looks_like_start
        self.cut_start = cut_start
        self.awaited = awaited
        self.max_frame_size = max_frame_size
        self.buf = bytearray()
        self.pos = 0  # read position in buf
        self.base = 0  # stream offset of buf[0], once anchored
        self.anchored = False  # False until a chunk (or a gap's end) says where the stream is
        self.fed = False  # whether any captured byte came (a gap's end anchors without one)
        self.in_sync = in_sync
        self.times: deque[tuple[int, int, int | None]] = deque()  # (stream offset, ns, packet) per chunk
        self.skip_start: int | None = None
        self.skip_reason = (
            "the capture joined this connection mid-stream: bytes before the first frame start"
            if not in_sync
            else "resync"
        )
        self.scanned_to = 0  # buf position up to which no confirmed alternative start exists
        self.chunk_starts: set[int] = set()  # stream offsets where a packet's bytes start
        # A frame a gap cut, read on to where its size says it ends: (Partial of its head, end).
        self.cut: tuple[Partial, int] | None = None

    # -- input ------------------------------------------------------------------------

    def feed(self, offset: int, data: bytes, ns: int, packet: int | None) -> list:
        self.fed = True
        if self.in_sync and not self.buf and (offset == self.base or not self.anchored) and len(data) >= 4:
            # The common case: nothing buffered and this chunk is exactly one whole frame (a
            # direction's first chunk included). The frame is cut from the chunk itself, leaving
            # the state _drain and _compact would.
            (size,) = _SIZE.unpack_from(data)
            if size == len(data) - 4 and size <= self.max_frame_size:
                self.anchored = True
                self.base = offset + len(data)
                self.scanned_to = max(0, self.scanned_to - len(data))
                self.times.clear()
                self.times.append((offset, ns, packet))
                self.chunk_starts.clear()
                return [new_frame(data[4:] if type(data) is bytes else bytes(data[4:]), offset, ns, ns, packet, packet)]
        return self._buffered(offset, data, ns, packet)

    def _buffered(self, offset: int, data: bytes, ns: int, packet: int | None) -> list:
        """``feed`` for any chunk, through the buffer."""
        if not self.anchored:
            self.base, self.anchored = offset, True
        self.times.append((offset, ns, packet))
        self.chunk_starts.add(offset)
        self.buf += data
        return self._drain()

    def gap(self, offset: int, length: int, reason: str, ns: int | None = None) -> list:
        """``length`` bytes at ``offset`` are missing: cut off what is pending and resync after.

        The missing bytes are said once: by the frame they cut, or else by a row of their own.
        """
        return _decided_by_event(self._gap(offset, length, reason, ns))

    def _gap(self, offset: int, length: int, reason: str, ns: int | None) -> list:
        out: list = []
        if not self.in_sync and self.cut is None and self.cut_start is not None:
            self._cut_from_candidate(offset + length, out)
        out += self._drain(final=True)
        missing = f"{length} bytes {_LOST.get(reason) or f'missing from the capture ({reason})'}"
        seen_ns = ns if reason == "snaplen_cut" else None  # the packet was captured, its payload cut
        if self._cut_through_gap(offset + length, missing, out, seen_ns):
            return out
        cut = [_ending_in(item, offset + length, seen_ns) for item in self._cut_pending(missing)]
        out += cut
        if not any(isinstance(item, Partial) for item in cut):
            out.append(Skipped(offset, length, ns, None, missing, captured=False))
        self._restart(offset + length)
        self.in_sync = False
        self.skip_reason = f"resync after a gap ({reason})"
        return out

    def _cut_from_candidate(self, gap_end: int, out: list) -> None:
        """While resyncing, before a gap that ends at ``gap_end``: the candidate the framer waits
        at, where a packet starts, is taken for a frame the gap cuts when ``cut_start`` finds it
        plausible and its size claims bytes past the gap (in a snaplen-limited capture no frame
        of more than one packet can ever be confirmed)."""
        pos, buf = self.pos, self.buf
        if len(buf) - pos < 8 or self.base + pos not in self.chunk_starts or not self.cut_start(buf, pos):  # type: ignore[misc]
            return
        cut = self._cut_at_pos(gap_end, "")
        if cut is not None:
            self._end_skip(out)
            self.cut = cut

    def _cut_at_pos(self, gap_end: int, reason: str) -> tuple[Partial, int] | None:
        """The frame whose size prefix is at ``pos``, as the head of a frame a gap cuts, and its
        end; None when its size is not plausible or the gap runs past its end."""
        (size,) = _SIZE.unpack_from(self.buf, self.pos)
        start = self.base + self.pos
        end = start + 4 + size
        if not 0 <= size <= self.max_frame_size or gap_end > end:
            return None
        first_ns, first_packet = self._time_at(start)
        return Partial(bytes(self.buf[self.pos + 4 :]), size, start, first_ns, first_packet, reason), end

    def _cut_through_gap(self, gap_end: int, missing: str, out: list, seen_ns: int | None) -> bool:
        """For a gap that ends at ``gap_end`` inside the frame being read (or one a gap cut
        before): its bytes up to the frame's end are that frame's, and framing goes on in step
        after it. False when the gap is not inside such a frame. ``seen_ns``: the time of the
        packet whose payload the gap is, when it was captured (the frame's end, if it is there)."""
        if self.cut is not None:
            head, end = self.cut
            if end <= gap_end:
                head = replace(head, last_ns=seen_ns)
            if gap_end > end:  # it runs past the frame: the frame is over, and the framer lost
                out.append(replace(head, span=self.base + len(self.buf) - head.offset))
                self.cut = None
                out.append(Skipped(end, gap_end - end, None, None, missing, captured=False))
                self._restart(gap_end)
                self.skip_reason = f"resync after a gap ({missing})"
                return True
            self.cut = (replace(head, reason=f"{head.reason}; {missing}" if head.reason else missing), end)
        elif self.in_sync and len(self.buf) - self.pos >= 4:
            self.cut = self._cut_at_pos(gap_end, missing)
            if self.cut is None:
                return False
            if self.cut[1] == gap_end:
                self.cut = (replace(self.cut[0], last_ns=seen_ns), gap_end)
        else:
            return False
        self._restart(gap_end)
        self.in_sync = False  # (the fast path in feed stays off until the frame's end)
        out += self._drain()
        return True

    def handed_to(self) -> int:
        """The stream offset before which every byte fed has come out (in a frame, a frame cut
        short or a skip); bytes from it on are still to come out."""
        if self.cut is not None:
            return self.cut[0].offset
        if self.skip_start is not None:
            return self.skip_start
        return self.base + self.pos

    def finish(self, why: str = "the capture ended inside this frame") -> list:
        if not self.buf and self.skip_start is None and self.cut is None:
            self._restart(None)  # nothing pending: no frame to cut short, no skip to report
            return []
        return self._finish_pending(why)

    def _finish_pending(self, why: str) -> list:
        """``finish`` with bytes (or a skip) pending."""
        out = self._drain(final=True)
        out += self._cut_pending(why)
        self._restart(None)
        return _decided_by_event(out)

    # -- internals --------------------------------------------------------------------

    def _drain(self, final: bool = False) -> list:
        """Cut every whole frame buffered. ``final``: no more bytes will follow these, so a
        resync candidate that would need more of them is no candidate."""
        out: list = []
        buf = self.buf
        while True:
            if not self.in_sync and not (self._rest_of_cut(out) if self.cut else self._resync(out, final)):
                break
            left = len(buf) - self.pos
            if left < 4:
                break
            (size,) = _SIZE.unpack_from(buf, self.pos)
            if size < 0 or size > self.max_frame_size:
                self.in_sync = False
                self.skip_reason = f"framing error: size {size} is not a plausible frame size"
                continue
            if left < 4 + size:
                break
            start = self.base + self.pos
            payload = bytes(buf[self.pos + 4 : self.pos + 4 + size])
            first_ns, first_packet, last_ns, last_packet = self._times_of(start, start + 3 + size)
            out.append(new_frame(payload, start, first_ns, last_ns, first_packet, last_packet))
            self.pos += 4 + size
        self._compact()
        return out

    def _rest_of_cut(self, out: list) -> bool:
        """The bytes of the frame a gap cut, up to its end; True once it is out and the framer
        is in step again after it."""
        assert self.cut is not None, "called while a cut frame is read on"
        head, end = self.cut
        at = end - self.base  # where the frame ends in buf
        if len(self.buf) < at:
            self.pos = len(self.buf)  # all of it the cut frame's (its span covers them)
            return False
        self.pos = at
        last_ns, last_packet = self._time_at(end - 1)  # (none: its last byte was in a gap)
        last_ns = head.last_ns if last_packet is None and last_ns is None else last_ns
        out.append(replace(head, span=end - head.offset, last_packet=last_packet, last_ns=last_ns))
        self.cut = None
        self.in_sync = True
        return True

    def _resync(self, out: list, final: bool) -> bool:
        """Find the next frame start; True once in sync again."""
        buf = self.buf
        check = self.looks_like_start
        while len(buf) - self.pos >= 4:
            verdict = check(buf, self.pos, final, self._boundary)
            if verdict == CONFIRMED and self.base + self.pos not in self.chunk_starts:
                better = self._packet_start_inside(final)
                if better is not None:
                    self._skip_to(better)
                    continue
            if verdict == CONFIRMED:
                self._end_skip(out, decided_by_bytes=not final)
                self.in_sync = True
                return True
            if verdict == MAYBE and not final:
                alternative = self._confirmed_after(self.pos)
                if alternative is None or self._answer_first(alternative):
                    return False  # wait for the bytes that decide
                self._skip_to(self._answer_before(alternative))
                continue
            self._skip_to(self.pos + 1)
        return False

    def _answer_first(self, alternative: int) -> bool:
        """Whether the frame waited for at ``pos`` beats a confirmed start inside the span it
        claims: it starts a packet and answers a captured request, and the other answers none,
        or a later one (brokers answer in order). Record bytes of a response spanning packets
        can chain to a packet boundary by chance; bytes that repeat the id of the answer they
        are in do not beat it."""
        awaited = self.awaited
        if awaited is None or self.base + self.pos not in self.chunk_starts:
            return False
        here = awaited(self.buf, self.pos)
        if here is None:
            return False
        there = awaited(self.buf, alternative)
        return there is None or there > here

    def _answer_before(self, alternative: int) -> int:
        """The first packet start after ``pos`` and before ``alternative`` where an answer a
        captured request waits for plausibly starts (it is weighed there), else ``alternative``."""
        if self.awaited is not None:
            for pos in self._packet_starts(self.pos, alternative):
                if self.awaited(self.buf, pos) is not None:
                    return pos
        return alternative

    def _packet_starts(self, after: int, before: int) -> list[int]:
        """Buffer positions between ``after`` and ``before`` where a packet's bytes start, in order."""
        low, high = self.base + after, self.base + before
        return [o - self.base for o in sorted(o for o in self.chunk_starts if low < o < high)]

    def _packet_start_inside(self, final: bool) -> int | None:
        """A confirmed start at a packet's first byte inside the frame confirmed mid-packet at ``pos``.

        A frame confirmed mid-packet only because its claimed end fell on a packet boundary
        loses to one that also starts where a packet starts: writers start frames there.
        """
        (size,) = _SIZE.unpack_from(self.buf, self.pos)
        for pos in self._packet_starts(self.pos, min(self.pos + 4 + size, len(self.buf))):
            if self.looks_like_start(self.buf, pos, final, self._boundary) == CONFIRMED:
                return pos
        return None

    def _boundary(self, pos: int) -> bool:
        """Whether a packet's bytes end at buffer position ``pos`` (the next one's start there)."""
        return pos == len(self.buf) or self.base + pos in self.chunk_starts

    def _skip_to(self, pos: int) -> None:
        if self.skip_start is None:
            self.skip_start = self.base + self.pos
        self.pos = pos

    def _confirmed_after(self, pos: int) -> int | None:
        """A confirmed frame start after ``pos`` in what is buffered, if any (searched once per byte)."""
        start = max(pos + 1, self.scanned_to)
        found, resume = first_confirmed(self.looks_like_start, self.buf, start, False, self._boundary)
        self.scanned_to = resume if found is None else found
        return found

    def _end_skip(self, out: list, decided_by_bytes: bool = False) -> None:
        """The bytes passed over up to ``pos`` as one ``Skipped``. Where they end is decided by the
        bytes after them (a frame start confirmed by what follows it), so ``decided_by_bytes``: by
        the packet just fed, the newest buffered, not by the skipped bytes' own packets (a read that
        stops before it has not decided them); else by the event that ends them (a gap, the end)."""
        start = self.skip_start
        if start is not None:
            length = self.base + self.pos - start
            if length:
                first_ns, first_packet = self._time_at(start)
                last = self.times[-1][2] if decided_by_bytes and self.times else None
                out.append(Skipped(start, length, first_ns, first_packet, self.skip_reason, True, last))
            self.skip_start = None

    def _cut_pending(self, reason: str) -> list:
        out: list = []
        if self.cut is not None:  # the frame a gap cut ends short of its end
            head = self.cut[0]
            out.append(replace(head, span=self.base + len(self.buf) - head.offset, reason=f"{head.reason}; {reason}"))
            self.cut = None
            return out
        left = len(self.buf) - self.pos
        if not self.in_sync:
            if left:
                self._skip_to(len(self.buf))
            self._end_skip(out)
            return out
        if left:
            start = self.base + self.pos
            first_ns, first_packet = self._time_at(start)
            claimed = _SIZE.unpack_from(self.buf, self.pos)[0] if left >= 4 else None
            if claimed is not None and (found := self._confirmed_packet_start(self.pos + 8)) is not None:
                # No more bytes are coming, and a frame starts inside the claim: the size prefix
                # was wrong (a corrupt byte), not the frames after it.
                body = bytes(self.buf[self.pos + 4 : found])
                why = f"its size prefix claims {claimed} bytes, but a frame starts {found - self.pos} bytes on"
                out.append(Partial(body, claimed, start, first_ns, first_packet, why))
                self.pos = found
                out += self._drain(final=True)
                return out + self._cut_pending(reason)
            body = bytes(self.buf[self.pos + 4 :]) if left >= 4 else bytes(self.buf[self.pos :])
            out.append(Partial(body, claimed, start, first_ns, first_packet, reason))
        return out

    def _confirmed_packet_start(self, pos: int) -> int | None:
        """The first buffer position from ``pos`` where a packet's bytes start and a frame start
        is confirmed with what is buffered (packet starts only: writers start frames there)."""
        low = self.base + pos
        for offset in sorted(o for o in self.chunk_starts if o >= low):
            if self.looks_like_start(self.buf, offset - self.base, True, self._boundary) == CONFIRMED:
                return offset - self.base
        return None

    def _restart(self, offset: int | None) -> None:
        self.buf.clear()
        self.pos = 0
        self.base, self.anchored = (offset, True) if offset is not None else (0, False)
        self.times.clear()
        self.skip_start = None
        self.scanned_to = 0
        self.chunk_starts.clear()
        if offset is None:
            self.cut = None

    def _times_of(self, first: int, last: int) -> tuple[int | None, int | None, int | None, int | None]:
        """(time and packet of the byte at ``first``, time of the byte at ``last``, the latest
        packet carrying any byte from ``first`` to ``last``), in one pass over the chunks."""
        first_ns = first_packet = last_ns = latest = latest_ns = None
        for chunk_offset, ns, packet in self.times:
            if chunk_offset > last:
                break
            if chunk_offset <= first:
                first_ns, first_packet = ns, packet
                latest, latest_ns = packet, ns
            elif packet is not None and (latest is None or later_packet(packet, ns, latest, latest_ns)):
                latest, latest_ns = packet, ns
            last_ns = ns
        return first_ns, first_packet, last_ns, latest

    def _time_at(self, offset: int) -> tuple[int | None, int | None]:
        found: tuple[int | None, int | None] = (None, None)
        for chunk_offset, ns, packet in self.times:
            if chunk_offset > offset:
                break
            found = (ns, packet)
        return found

    def _compact(self) -> None:
        if not self.anchored:
            return  # nothing was ever fed (a direction that carried no payload byte)
        if self.pos >= _COMPACT_AT or self.pos == len(self.buf):
            del self.buf[: self.pos]
            self.base += self.pos
            self.scanned_to = max(0, self.scanned_to - self.pos)
            self.pos = 0
            times = self.times
            while len(times) > 1 and times[1][0] <= self.base:
                times.popleft()
            starts = self.chunk_starts
            if len(starts) > 1 or (starts and min(starts) < self.base):
                self.chunk_starts = {o for o in starts if o >= self.base}


def _ending_in(item, gap_end: int, seen_ns: int | None):
    """``item``, a frame a gap cut whose claimed end is in the gap, with the time of its end."""
    if type(item) is Partial and seen_ns is not None and item.claimed_size is not None:
        if item.offset + 4 + item.claimed_size <= gap_end:
            return replace(item, last_ns=seen_ns)
    return item


def _decided_by_event(items: list) -> list:
    """What a gap or the end of the input cut (bytes skipped, frames cut short) was decided
    there, not by bytes: it carries no ``last_packet`` (the pairer takes the event's). Whole
    frames keep theirs: they are whole by their bytes, whatever came after."""
    return [
        replace(item, last_packet=None) if type(item) is not Frame and item.last_packet is not None else item
        for item in items
    ]
