"""Responses handed over before their request, held until a request with their correlation id comes.

A response comes before its request when the client side was still resynchronising (a capture
joined mid-stream: the client's start is settled only after the next 256 packets of the capture,
minutes on a quiet one), and when the capture's clocks disagree: one file per direction from two
hosts, the broker's clock behind the client's by more than the time to answer. Then every answer
of a connection comes ahead of its request, by as much as the clocks differ: seconds, between
hosts whose clocks are not kept in step, and thousands of answers on a busy connection. Every
answer let go while its request is still to come makes two rows of one exchange, so a connection
holds up to ``MAX_HELD`` answers and ``MAX_HELD_BYTES`` of them (a few seconds of a busy
consumer's Fetch answers, whatever the other connections hold: a connection's rows do not depend
on what else the read holds), and lets the oldest go past either. One whose client side has sent
no byte at all while its held answers span a minute of capture time is taken to have no client
side captured (a mirror port copying one direction); it holds ``ONE_SIDED_HELD`` answers, as many
as any connection used to, so a capture of only the broker's side of many connections costs what
it did.

When its request comes, a held response captured before it answers it only where it reads as its
answer (whole by the spec, or with a deviation its peer is known for: ``quirks``); otherwise it
answers an earlier request with that id, not captured, and is let go.

A response whose request was framed first, but which was captured before it while requests sent
before that one still wait for their answers, is ``Undecided``: it is the request's answer (the
clocks disagree, and the earlier requests' answers were lost), or an earlier request's with the
same id, not captured (the client's ids started again: a reconnect from the same port whose SYN
was not captured). A broker answers a connection's requests in order, so the next answer decides.

Owns the holding, its bounds and those tests. ``pairing`` owns what becomes of them: a response
let go is a ``request_missing`` row, read as ``orphans`` says.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from .decoding import BodyDecoder, UndecodableBody
from .model import Frame
from .quirks import explain
from .sniff import RequestHeader

MAX_HELD = 1 << 16  # responses held per connection, whatever their size
MAX_HELD_BYTES = 256 << 20  # of them per connection (256 Fetch answers of 1 MiB, as before)
ONE_SIDED_HELD = 256  # held by a connection whose client side sent nothing for a minute
ONE_SIDED_NS = 60 * 10**9  # of capture time spanned by its held answers
MAX_UNDECIDED = 256  # undecided per connection; past it the oldest answers its request


class HeldAnswers(OrderedDict[int, Frame]):
    """One connection's held responses, oldest first, by correlation id (a dict: the pairing asks
    whether there are any for every request)."""

    __slots__ = ("_decoder", "bytes", "client_spoke", "max_bytes")

    def __init__(self, decoder: BodyDecoder, max_bytes: int = MAX_HELD_BYTES):
        super().__init__()
        self._decoder = decoder
        self.bytes = 0
        self.max_bytes = max_bytes
        # Whether the connection's client side has sent any byte (its framing's to say).
        self.client_spoke: Callable[[], bool] = _yes

    def frames(self) -> list[Frame]:
        return list(self.values())

    def hold(self, correlation_id: int, frame: Frame) -> list[Frame]:
        """Hold ``frame`` (no other with its id is held); those let go to keep the bounds, oldest first."""
        self[correlation_id] = frame
        self.bytes += len(frame.payload)
        let_go = []
        while len(self) > 1 and (len(self) > MAX_HELD or self.bytes > self.max_bytes):
            let_go.append(self.oldest())
        if len(self) > ONE_SIDED_HELD and self._one_sided(frame):
            while len(self) > ONE_SIDED_HELD:
                let_go.append(self.oldest())
        return let_go

    def _one_sided(self, newest: Frame) -> bool:
        """Whether the client side sent nothing while the held answers span ``ONE_SIDED_NS``."""
        oldest_ns, newest_ns = next(iter(self.values())).last_ns, newest.last_ns
        spans = oldest_ns is not None and newest_ns is not None and newest_ns - oldest_ns > ONE_SIDED_NS
        return spans and not self.client_spoke()

    def oldest(self) -> Frame:
        frame = self.popitem(last=False)[1]
        self._let_go(frame)
        return frame

    def _let_go(self, frame: Frame) -> None:
        self.bytes -= len(frame.payload)

    def answer(self, request, header: RequestHeader) -> tuple[Frame | None, Frame | None]:
        """(the held response that answers ``request``, just come with ``header``; the one held
        with its id that answers an earlier request instead, let go): either, or neither, is None."""
        frame = self.pop(header.correlation_id, None)
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


class Undecided(dict[int, Frame]):
    """A connection's undecided responses, oldest first, by correlation id (that of a pending request)."""

    __slots__ = ()

    def frames(self) -> list[Frame]:
        return list(self.values())

    def oldest(self) -> Frame:
        return self.pop(next(iter(self)))

    def decided_by(
        self, answer: Frame, answered_at: int, sent_at: Callable[[int], int | None]
    ) -> list[tuple[Frame, bool]]:
        """``answer`` answers the request at stream offset ``answered_at``: the undecided responses
        before it, each with whether it answers the pending request with its id (``sent_at``: that
        request's stream offset, None when none waits), which it does where that was sent before."""
        decided = []
        for correlation_id, frame in list(self.items()):
            if frame.offset < answer.offset:
                del self[correlation_id]
                sent = sent_at(correlation_id)
                decided.append((frame, sent is not None and sent < answered_at))
        return decided


def _yes() -> bool:
    return True


def captured_before(response: Frame, request) -> bool:
    """Whether a response was captured before the request it answers or may answer (a time of 0
    is unknown, as in a pcapng simple packet block: neither before nor after)."""
    request_ns = getattr(request, "first_ns", None)
    return bool(response.last_ns and request_ns and response.last_ns < request_ns)


def answered_before(response: Frame, request) -> str:
    """What the row of a request answered by a response captured before it says."""
    ahead_ms = (request.first_ns - response.last_ns) / 1e6
    return (
        f"response captured {ahead_ms:.3f} ms before its request: the capture's clocks or timestamps"
        " disagree (one file per direction from two hosts?), so there is no latency"
    )
