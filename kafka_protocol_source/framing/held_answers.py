"""Responses handed over before their request, held until a request with their correlation id comes.

A response comes before its request when the client side was still resynchronising (a capture
joined mid-stream), and when the capture's clocks disagree: one file per direction from two
hosts, the broker's clock behind the client's by more than the time to answer. Then every
answer of a connection comes ahead of its request, by as much as the clocks differ: seconds,
between hosts whose clocks are not kept in step, and thousands of answers on a busy connection.
So a response is held until responses captured a minute after it come, within bounds on the
bytes held: per connection (as many as the out-of-order bytes a TCP direction may hold) and by all
connections of a read together (``HeldBudget``: a capture of only the broker's side of a thousand
connections holds no more than that), and on their number; past any of these, the connection's
oldest is let go. A connection whose client side was not captured at all thus gives its responses'
rows at most a minute late.

When its request comes, a held response captured before it answers it only where it reads as its
answer (whole by the spec, or with a deviation its peer is known for: ``quirks``); otherwise it
answers an earlier request with that id, not captured, and is let go.

Owns the holding, its bound and that test. ``pairing`` owns what becomes of them: a response let
go is a ``request_missing`` row, read as ``orphans`` says.
"""

from __future__ import annotations

from collections import OrderedDict

from ..tcp import DEFAULT_MAX_BUFFERED_BYTES
from .decoding import BodyDecoder, UndecodableBody
from .model import Frame
from .quirks import explain
from .sniff import RequestHeader

MAX_HELD = 1 << 16  # responses held per connection, whatever their size
MAX_HELD_BYTES = 64 << 20  # held by all connections of a read together (HeldBudget's default)
HELD_FOR_NS = 60 * 10**9  # of capture time, after which a held response is let go


class HeldBudget:
    """The bytes of responses the connections of one read hold, and the most they may."""

    __slots__ = ("bytes", "max_bytes")

    def __init__(self, max_bytes: int = MAX_HELD_BYTES):
        self.bytes, self.max_bytes = 0, max_bytes


class HeldAnswers:
    """One connection's held responses, oldest first, by correlation id."""

    __slots__ = ("_budget", "_decoder", "_frames", "bytes", "max_bytes")

    def __init__(self, decoder: BodyDecoder, budget: HeldBudget, max_bytes: int = DEFAULT_MAX_BUFFERED_BYTES):
        self._decoder, self._budget = decoder, budget
        self._frames: OrderedDict[int, Frame] = OrderedDict()
        self.bytes = 0
        self.max_bytes = max_bytes

    def __bool__(self) -> bool:
        return bool(self._frames)

    def __contains__(self, correlation_id: object) -> bool:
        return correlation_id in self._frames

    def frames(self) -> list[Frame]:
        return list(self._frames.values())

    def hold(self, correlation_id: int, frame: Frame) -> list[Frame]:
        """Hold ``frame`` (no other with its id is held); those let go to keep the bounds, oldest first."""
        frames, budget = self._frames, self._budget
        frames[correlation_id] = frame
        self.bytes += len(frame.payload)
        budget.bytes += len(frame.payload)
        let_go = []
        while len(frames) > 1 and (
            len(frames) > MAX_HELD
            or self.bytes > self.max_bytes
            or budget.bytes > budget.max_bytes
            or self._stale(frame)
        ):
            let_go.append(self.oldest())
        return let_go

    def _stale(self, newest: Frame) -> bool:
        """Whether the oldest held was captured over ``HELD_FOR_NS`` before ``newest``."""
        oldest_ns, newest_ns = next(iter(self._frames.values())).last_ns, newest.last_ns
        return oldest_ns is not None and newest_ns is not None and newest_ns - oldest_ns > HELD_FOR_NS

    def oldest(self) -> Frame:
        frame = self._frames.popitem(last=False)[1]
        self._let_go(frame)
        return frame

    def _let_go(self, frame: Frame) -> None:
        self.bytes -= len(frame.payload)
        self._budget.bytes -= len(frame.payload)

    def answer(self, request, header: RequestHeader) -> tuple[Frame | None, Frame | None]:
        """(the held response that answers ``request``, just come with ``header``; the one held
        with its id that answers an earlier request instead, let go): either, or neither, is None."""
        frame = self._frames.pop(header.correlation_id, None)
        if frame is None:
            return None, None
        self._let_go(frame)
        if captured_before(frame, request) and not self._reads_as_answer(frame, header):
            return None, frame
        return frame, None

    def _reads_as_answer(self, response: Frame, header: RequestHeader) -> bool:
        """Whether ``response`` reads as the answer of the request ``header`` heads: whole and by
        the spec, or with a deviation its peer is known for (``quirks``)."""
        pair = (header.api_key, header.api_version)
        if pair in self._decoder.exact_response_bodies(response.payload, [pair]):
            return True
        if not self._decoder.defines_response(*pair):
            return False
        try:
            decoded = self._decoder.decode_response(response.payload, *pair, None)
        except UndecodableBody:
            return False
        return explain(*pair, "response", decoded) is not None


def captured_before(response: Frame, request) -> bool:
    """Whether a response was captured before the request it answers or may answer."""
    request_ns = getattr(request, "first_ns", None)
    return response.last_ns is not None and request_ns is not None and response.last_ns < request_ns


def answered_before(response: Frame, request) -> str:
    """What the row of a request answered by a response captured before it says."""
    ahead_ms = (request.first_ns - response.last_ns) / 1e6
    return (
        f"response captured {ahead_ms:.3f} ms before its request: the capture's clocks or timestamps"
        " disagree (one file per direction from two hosts?), so there is no latency"
    )
