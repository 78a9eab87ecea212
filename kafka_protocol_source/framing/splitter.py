"""Cut one direction's byte stream into Kafka's int32 size-prefixed frames.

Owns buffering, the frame-size cap, capture times per frame, and resynchronising: a stream
that starts mid-frame (capture started late) or resumes after a gap is scanned for the next
position where a frame plausibly starts, as judged by the caller's ``looks_like_start``
(plausible size, then a request header that decodes, or a known correlation id). Skipped bytes
and frames cut short by a gap are reported, never spliced or dropped in silence.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Callable

from .model import Frame

_SIZE = struct.Struct(">i")
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024
_COMPACT_AT = 1 << 16


@dataclass(frozen=True, slots=True)
class Skipped:
    """Bytes passed over while looking for a frame start."""

    offset: int
    length: int
    first_ns: int | None
    first_packet: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class Partial:
    """A frame cut short: by a gap in the capture, or by the end of it."""

    payload: bytes  # the part present, without the size prefix when it was complete
    claimed_size: int | None
    offset: int
    first_ns: int | None
    first_packet: int | None
    reason: str


# (buffer, position) -> True (a frame starts here), False, or None (need more bytes to tell)
StartCheck = Callable[[bytes, int], "bool | None"]


class DirectionFramer:
    def __init__(self, looks_like_start: StartCheck, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 in_sync: bool = False):
        self.looks_like_start = looks_like_start
        self.max_frame_size = max_frame_size
        self.buf = bytearray()
        self.pos = 0  # read position in buf
        self.base = None  # stream offset of buf[0]
        self.in_sync = in_sync
        self.times: deque[tuple[int, int, int]] = deque()  # (stream offset, ns, packet) per chunk
        self.skip_start: int | None = None
        self.skip_reason = ""

    # -- input ------------------------------------------------------------------------

    def feed(self, offset: int, data: bytes, ns: int, packet: int) -> list:
        if self.base is None:
            self.base = offset
        self.times.append((offset, ns, packet))
        self.buf += data
        return self._drain()

    def gap(self, offset: int, length: int, reason: str) -> list:
        """``length`` bytes at ``offset`` are missing: cut off what is pending and resync after."""
        out = self._drain(final=True)
        out += self._cut_pending(f"{length} bytes missing from the capture ({reason})")
        self._restart(offset + length)
        self.in_sync = False
        self.skip_reason = f"resync after a gap ({reason})"
        return out

    def finish(self, why: str = "the capture ended inside this frame") -> list:
        out = self._drain(final=True)
        out += self._cut_pending(why)
        self._restart(None)
        return out

    def set_check(self, looks_like_start: StartCheck) -> list:
        """Swap the start check (once it is known which side this is) and retry."""
        self.looks_like_start = looks_like_start
        return self._drain()

    # -- internals --------------------------------------------------------------------

    def _drain(self, final: bool = False) -> list:
        """Cut every whole frame buffered. ``final``: no more bytes will follow these, so a
        resync candidate that would need more of them is no candidate."""
        out = []
        buf = self.buf
        while True:
            if not self.in_sync and not self._resync(out, final):
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
            payload = bytes(buf[self.pos + 4:self.pos + 4 + size])
            first_ns, first_packet = self._time_at(start)
            last_ns, _ = self._time_at(start + 3 + size)
            out.append(Frame(payload, start, first_ns, last_ns, first_packet))
            self.pos += 4 + size
        self._compact()
        return out

    def _resync(self, out: list, final: bool) -> bool:
        """Find the next frame start; True once in sync again."""
        buf = self.buf
        while len(buf) - self.pos >= 4:
            verdict = self.looks_like_start(buf, self.pos)
            if verdict is None:
                if not final:
                    return False  # not enough bytes to judge this position yet
                verdict = False
            if verdict:
                self._end_skip(out)
                self.in_sync = True
                return True
            if self.skip_start is None:
                self.skip_start = self.base + self.pos
            self.pos += 1
        return False

    def _end_skip(self, out: list) -> None:
        if self.skip_start is not None:
            first_ns, first_packet = self._time_at(self.skip_start)
            length = self.base + self.pos - self.skip_start
            out.append(Skipped(self.skip_start, length, first_ns, first_packet, self.skip_reason or "resync"))
            self.skip_start = None

    def _cut_pending(self, reason: str) -> list:
        out = []
        left = len(self.buf) - self.pos
        if not self.in_sync:
            self.pos = len(self.buf)
            self._end_skip(out)
            return out
        if left:
            start = self.base + self.pos
            first_ns, first_packet = self._time_at(start)
            claimed = _SIZE.unpack_from(self.buf, self.pos)[0] if left >= 4 else None
            body = bytes(self.buf[self.pos + 4:]) if left >= 4 else bytes(self.buf[self.pos:])
            out.append(Partial(body, claimed, start, first_ns, first_packet, reason))
        return out

    def _restart(self, offset: int | None) -> None:
        self.buf.clear()
        self.pos = 0
        self.base = offset
        self.times.clear()
        self.skip_start = None

    def _time_at(self, offset: int) -> tuple[int | None, int | None]:
        found = (None, None)
        for chunk_offset, ns, packet in self.times:
            if chunk_offset > offset:
                break
            found = (ns, packet)
        return found

    def _compact(self) -> None:
        if self.pos >= _COMPACT_AT or self.pos == len(self.buf):
            del self.buf[:self.pos]
            self.base += self.pos
            self.pos = 0
            times = self.times
            while len(times) > 1 and times[1][0] <= self.base:
                times.popleft()
