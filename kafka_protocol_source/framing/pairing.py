"""Pair each response with its request by correlation id, and turn everything into exchanges.

Owns, per connection: requests in flight (pipelined, answered in any order), Produce with
acks=0 (no response expected: a ``no_response`` row once a later request's response, or the
end, shows none came; some brokers, Tansu among them, answer anyway, and then it pairs as any
other), responses whose request was not captured, requests left unanswered, frames that do not
decode, frames cut by gaps, bytes skipped to resync, and the raw SASL tokens that follow a
SaslHandshake v0 (KIP-43: not Kafka frames until authentication ends). Every frame becomes part
of exactly one ``Exchange``, and each exchange says which bytes of the two streams it holds
(``request_span``/``response_span``).

Pairing needs the request header only: a request whose body the definitions in use cannot read
(an api key or version they lack, a body that does not match) still pairs with its response,
with both raw bodies kept. A response can be handed over before its request when the client
side was still resynchronising (a capture joined mid-stream), or the capture's clocks disagree:
it waits, bounded, for a request with its correlation id (``held_answers``), and is a
``request_missing`` row only when none comes (its body read at an api and version of the
connection's requests when exactly one fits, or, on a connection none of whose requests was
captured, at the one api all layouts that read it are of: ``orphans``). The row of each exchange
(times, sizes, spans, notes) is built by ``exchange_build``; a retransmitted copy that differed
from the bytes read is said in the note of the row holding them, when that row is still to come
(``conflicts``).
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass

from ..capture.model import later_packet
from ..spec.api_keys import JOIN_GROUP, PRODUCE, SASL_HANDSHAKE, SYNC_GROUP
from .conflicts import WAITING_LIMIT, Conflict, conflict, noted, overlaps
from .decoding import UndecodableBody
from .exchange_build import (
    answered,
    build_exchange,
    deviation_error,
    notes,
    read_up_to,
    stream_span,
    unknown_api_error,
)
from .held_answers import MAX_UNDECIDED, HeldAnswers, Undecided, answered_before, captured_before
from .model import (
    GAP,
    LEFT_AT_END,
    MALFORMED,
    NO_RESPONSE,
    OK,
    REQUEST_MISSING,
    SASL,
    UNANSWERED,
    UNKNOWN_API,
    Exchange,
    Frame,
)
from .orphans import ConnectionOrphans
from .sniff import MAX_API_KEY, MAX_API_VERSION, RequestHeader, new_request_header, read_request_header
from .splitter import Partial, Skipped

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")
_FIXED_HEADER = struct.Struct(">hhi")
_KEY_VERSION = struct.Struct(">hh")
_CLIENT_ID_LENGTH = struct.Struct(">h")
ACKS0_ANSWERED = "Produce with acks=0, answered anyway (Apache Kafka's brokers send no response)"
ACKS0_LIMIT = 256  # Produce requests with acks=0 pending; the oldest is given its no_response row past it


@dataclass(slots=True)
class Pending:
    """A request waiting for its response."""

    frame: Frame | Partial
    header: RequestHeader
    decoded: dict | None
    status: str = OK
    error: str | None = None
    note: str | None = None


class Pairer:
    def __init__(self, ctx, connection_id: str, client_address: str | None, broker_address: str | None):
        self.ctx = ctx
        self.out: list[Exchange] = []
        self.ids = (connection_id, client_address, broker_address)
        self.pending: dict[int, Pending] = {}
        self.held = HeldAnswers(ctx.decoder)  # responses handed over before their request
        self.undecided = Undecided()  # responses captured before their request: the next answer decides
        self.client_ids: set[str | None] = set()  # seen on this connection; resync prefers them
        self.sasl_mode = False
        self.sasl_tokens: deque[Frame] = deque()
        self.filtering = ctx.apis is not None or ctx.window_ns is not None
        self._defines = ctx.decoder.defines_request
        # Requests the filters leave out: correlation id -> (stream offset, first packet; None for
        # a Produce, which may have acks=0 and so no answer: see _sent_after_others).
        self.unwanted: dict[int, tuple[int, int | None]] = {}
        self.acks0: deque[int] = deque()  # correlation ids of Produce requests with acks=0 pending, in order
        self.orphan_reading = ConnectionOrphans(ctx.decoder)  # how responses without their request are read
        self.broker_gap: tuple[int | None, str] | None = None  # the last bytes the broker side lost: (time, what)
        self.at: int | None = None  # the packet that decided the item being taken (see completed_at)
        self.at_ns: int | None = None  # when it was captured, where known
        self.conflicts: list[Conflict] = []  # differing copies whose rows are still to come
        # The last answer paired (filtered out too): (its stream offset, its request's).
        self.last_answered: tuple[int, int] | None = None

    def pending_ids(self):
        return self.pending.keys()

    def take(self, items: list, is_request: bool, at: int | None = None) -> list[Exchange]:
        """What a framer cut from one side (frames, frames cut short, bytes skipped) in; the
        exchanges that completed out. Each item is decided by its bytes (its ``last_packet``),
        or else by the event at packet ``at`` (a gap, the connection's close; None: the end of
        the input, which completes nothing)."""
        for item in items:
            self.at = item.last_packet if item.last_packet is not None else at
            self.at_ns = getattr(item, "last_ns", None) if item.last_packet is not None else None
            if isinstance(item, Skipped):
                self.skipped(item, is_request)
            elif isinstance(item, Partial):
                self.partial(item, is_request)
            elif is_request:
                self.request(item)
            else:
                self.response(item)
        return self._completed()

    def _completed(self) -> list[Exchange]:
        done, self.out = self.out, []
        if self.conflicts and done:
            return noted(done, self.conflicts)
        return done

    def conflict(self, offset: int, length: int, packet: int | None, is_request: bool, handed_over: bool) -> None:
        """Bytes [offset, offset + length) of one side came again, different (the first copy is
        the one read), in ``packet``; ``handed_over``: the framer has cut them into what it handed
        over. Said in the note of the row that holds them, unless that row has gone out already."""
        found = conflict(is_request, offset, length, packet)
        if handed_over and not any(overlaps(stream_span(frame), found) for frame in self._waiting(is_request)):
            return  # in a row already given out (or left out by the filters)
        self.conflicts.append(found)
        if len(self.conflicts) > WAITING_LIMIT:
            del self.conflicts[0]

    def _waiting(self, is_request: bool) -> list:
        """The frames of one side handed over whose rows are still to come."""
        if is_request:
            return [pending.frame for pending in self.pending.values()] + list(self.sasl_tokens)
        return self.held.frames() + self.undecided.frames()

    # -- requests ---------------------------------------------------------------------

    def request(self, frame: Frame) -> None:
        payload = frame.payload
        if not self.filtering and len(payload) >= 4 and self._defines(*_KEY_VERSION.unpack_from(payload)):
            # The common case: a request the definitions have, decoded straight away. Its header
            # alone matters only when the body does not decode (the general path below then
            # reads it: decoding again is the price of the rare bad frame).
            try:
                decoded = self.ctx.decoder.decode_request(payload)
            except UndecodableBody:
                pass
            else:
                self._decoded_request(frame, decoded)
                return
        header = self._header(payload)
        if self.filtering and header is not None and not self.ctx.wanted(header.api_key, frame.first_ns):
            self.orphan_reading.used.add((header.api_key, header.api_version))
            if not self.held or self._held_answer(frame, header) is None:
                packet = None if header.api_key == PRODUCE else frame.first_packet
                self.unwanted[header.correlation_id] = (frame.offset, packet)  # not decoded; its response dropped too
            return
        if header is not None and not self._defines(header.api_key, header.api_version):
            if self.sasl_mode:
                self.sasl_tokens.append(frame)
                return
            self._wait(Pending(frame, header, None, UNKNOWN_API, unknown_api_error(self.ctx, header)))
            return
        try:
            decoded = self.ctx.decoder.decode_request(frame.payload)
        except UndecodableBody as e:
            if self.sasl_mode:
                self.sasl_tokens.append(frame)  # a raw SASL token, not a Kafka request
                return
            if header is None:
                self._emit(MALFORMED, frame, None, error=str(e), raw_request=frame.payload)
            else:
                self._wait(Pending(frame, header, None, MALFORMED, str(e)))
            return
        self._decoded_request(frame, decoded)

    def _decoded_request(self, frame: Frame, decoded: dict) -> None:
        self.sasl_mode = False
        header = new_request_header(
            len(frame.payload),
            decoded["api_key"],
            decoded["api_version"],
            decoded["correlation_id"],
            decoded.get("client_id"),
            0,
        )
        self.client_ids.add(header.client_id)
        if decoded.get("trailing_bytes") or decoded.get("deviations"):
            self._wait(Pending(frame, header, decoded, MALFORMED, deviation_error("request", decoded)))
            return
        api_key = decoded["api_key"]
        if api_key == JOIN_GROUP or api_key == SYNC_GROUP:
            orphans = self.orphan_reading
            orphans.protocol_type = decoded["body"].get("protocol_type") or orphans.protocol_type
        if api_key == PRODUCE and decoded["body"].get("acks") == 0:
            self.acks0.append(header.correlation_id)  # (before _wait: a held response may answer it there)
            self._wait(Pending(frame, header, decoded, NO_RESPONSE))
            if len(self.acks0) > ACKS0_LIMIT:
                self._no_response(self.acks0.popleft())
            return
        self._wait(Pending(frame, header, decoded))

    def _no_response(self, correlation_id: int) -> None:
        """The row of a Produce with acks=0 that got no response, as none was to come."""
        pending = self.pending.get(correlation_id)
        if pending is not None and pending.status == NO_RESPONSE:
            del self.pending[correlation_id]
            note = notes("Produce with acks=0: no response is sent", pending.decoded)
            self._emit(NO_RESPONSE, pending.frame, pending.decoded, note=note)

    def _answered_after(self, pending: Pending) -> None:
        """A response came for ``pending``: a broker answers a connection's requests in order, so
        the Produce requests with acks=0 sent before it got none."""
        while self.acks0:
            earlier = self.pending.get(self.acks0[0])  # (``pending`` itself is out of it already)
            if earlier is not None and earlier.frame.offset > pending.frame.offset:
                break
            self._no_response(self.acks0.popleft())

    def _header(self, payload: bytes, size: int | None = None) -> RequestHeader | None:
        """The request header alone, for any api key and version in the plausible ranges.

        ``size``: the frame's claimed size, when ``payload`` is only the part of it captured.
        """
        size = len(payload) if size is None else size
        length = _CLIENT_ID_LENGTH.unpack_from(payload, 8)[0] if len(payload) >= 10 else 0
        head = _SIZE.pack(size) + payload[: 10 + max(length, 0)]
        found = read_request_header(head, 0, self.ctx.known, strict=False, max_frame_size=size)
        if found is None and len(payload) >= 8:  # cut inside the client id: what is there still pairs
            api_key, version, correlation_id = _FIXED_HEADER.unpack_from(payload)
            if 0 <= api_key <= MAX_API_KEY and 0 <= version <= MAX_API_VERSION and correlation_id >= 0:
                return RequestHeader(len(payload), api_key, version, correlation_id, None, 8)
        return found or None

    def _wait(self, pending: Pending) -> None:
        header = pending.header
        correlation_id = header.correlation_id
        self.orphan_reading.used.add((header.api_key, header.api_version))
        if correlation_id in self.pending:
            self._no_response(correlation_id)  # (an acks=0 request with this id got no response)
        older = self.pending.pop(correlation_id, None)
        if older is not None:
            self._emit_pending(older, UNANSWERED, "correlation id reused by a later request before any response")
        self.pending[correlation_id] = pending
        if self.held and (answer := self._held_answer(pending.frame, header)) is not None:
            self.response(answer, held=True)

    def _held_answer(self, request, header: RequestHeader) -> Frame | None:
        """The held response that answers ``request``, just come (``held_answers``); one held with
        its id that answers an earlier request instead is given its row now."""
        answer, earlier = self.held.answer(request, header)
        if answer is not None and self._overtaken(answer, request):
            answer, earlier = None, answer
        if earlier is not None:
            self._missing(earlier)
        return answer

    def _overtaken(self, answer: Frame, request) -> bool:
        """Whether an answer captured after the held ``answer`` answered a request sent before
        ``request``: a broker answers a connection's requests in order, so ``answer`` answers an
        earlier request with its id, not captured (the client's ids started again)."""
        last = self.last_answered
        return last is not None and last[0] > answer.offset and last[1] < request.offset

    # -- responses --------------------------------------------------------------------

    def response(self, frame: Frame, held: bool = False, deciding: bool = True) -> None:
        """``held``: the response came before its request, and waited for it; ``deciding``: what it
        answers decides the undecided responses before it (``_decide``)."""
        payload = frame.payload
        correlation_id = _CORRELATION.unpack_from(payload)[0] if len(payload) >= 4 else None
        pending = self.pending.get(correlation_id) if correlation_id is not None else None
        if pending is None or correlation_id is None:
            self._unasked(frame, correlation_id, deciding)
            return
        before = captured_before(frame, pending.frame)  # held for it, or out of time order in the capture
        if before and not held and self._undecided(frame, correlation_id, pending):
            return
        del self.pending[correlation_id]
        self.last_answered = (frame.offset, pending.frame.offset)
        if self.undecided and deciding:
            self._decide(frame, pending.frame.offset)
        if self.acks0:
            self._answered_after(pending)
            if pending.status == NO_RESPONSE:
                pending.status, pending.note = OK, ACKS0_ANSWERED
        if before:
            pending.note = "; ".join(filter(None, (pending.note, answered_before(frame, pending.frame))))
        header = pending.header
        if not self.ctx.decoder.defines_response(header.api_key, header.api_version):
            self._emit_pending(pending, pending.status, pending.error, response_frame=frame, raw_response=payload)
            return
        try:
            response = self.ctx.decoder.decode_response(payload, header.api_key, header.api_version, pending.decoded)
        except UndecodableBody as e:
            status = pending.status if pending.status != OK else MALFORMED
            self._emit_pending(
                pending,
                status,
                str(e) if pending.error is None else f"{pending.error}; {e}",
                response_frame=frame,
                raw_response=payload,
            )
            return
        if header.api_key == SASL_HANDSHAKE and header.api_version == 0 and response["body"].get("error_code") == 0:
            self.sasl_mode = True  # KIP-43: raw tokens follow, without Kafka headers
        status, error = pending.status, pending.error
        deviated = response.get("trailing_bytes") or response.get("deviations")
        if status == OK and not deviated and not self.filtering and pending.decoded is not None and not pending.note:
            request_frame = pending.frame
            if type(request_frame) is Frame:
                completed_at = self._completed_at(request_frame, frame)
                self.out.append(
                    answered(self.ctx, self.ids, request_frame, pending.decoded, frame, response, completed_at)
                )
                return
        if deviated:
            status = MALFORMED if status == OK else status
            error = "; ".join(filter(None, (error, deviation_error("response", response))))
        self._emit_pending(
            pending,
            status,
            error,
            response_frame=frame,
            response=response,
            raw_response=payload if deviated or pending.decoded is None else None,
        )

    def _undecided(self, frame: Frame, correlation_id: int, pending: Pending) -> bool:
        """Whether ``frame``, captured before ``pending`` (framed first), is left undecided: its
        answer or an earlier request's with its id (``held_answers.Undecided``)."""
        if correlation_id in self.undecided or not self._sent_after_others(pending, frame):
            return False
        self.undecided[correlation_id] = frame
        if len(self.undecided) > MAX_UNDECIDED:
            self._decide_oldest()
        return True

    def _unasked(self, frame: Frame, correlation_id: int | None, deciding: bool) -> None:
        """A response that answers no pending request: held for its request, or given its row."""
        if correlation_id in self.unwanted:  # the answer of a request the filters leave out
            offset = self.unwanted.pop(correlation_id)[0]
            self.last_answered = (frame.offset, offset)
            if self.undecided and deciding:
                self._decide(frame, offset)
        elif self.sasl_tokens:
            self._emit_sasl(self.sasl_tokens.popleft(), frame)
        elif correlation_id is not None and correlation_id not in self.held:
            for let_go in self.held.hold(correlation_id, frame):
                self._missing(let_go)
        else:
            self._missing(frame)

    def _sent_after_others(self, pending: Pending, response: Frame) -> bool:
        """Whether requests sent before ``pending`` but captured after ``response`` wait for their
        answers (those the filters leave out too). Requests captured before it are left out: any
        of them may wait for good (its answer lost), and a read starting after it would decide
        otherwise. So are Produce requests, which may have acks=0 (filtered out, they are not
        decoded to tell)."""
        offset, after = pending.frame.offset, response.last_packet
        if after is None:
            return False
        if any(o < offset and p is not None and p > after for o, p in self.unwanted.values()):
            return True
        return any(
            o.frame.offset < offset and (o.frame.first_packet or -1) > after and o.header.api_key != PRODUCE
            for o in self.pending.values()
            if o is not pending
        )

    def _decide(self, answer: Frame, answered_at: int) -> None:
        """``answer``, just come, answers the request at stream offset ``answered_at``: it decides
        the undecided responses before it (``held_answers.Undecided``)."""
        for frame, answers in self.undecided.decided_by(answer, answered_at, self._sent_at):
            if answers:
                self.response(frame, held=True, deciding=False)
            else:
                self._missing(frame, decided_here=True)

    def _sent_at(self, correlation_id: int) -> int | None:
        pending = self.pending.get(correlation_id)
        return None if pending is None else pending.frame.offset

    def _decide_oldest(self) -> None:
        """The oldest undecided response answers its pending request (as the clocks disagree)."""
        self.response(self.undecided.oldest(), held=True, deciding=False)

    def _missing(self, frame: Frame, decided_here: bool = False) -> None:
        """The row of a response whose request was not captured, read at an api and version of
        this connection's requests when exactly one reads it (``orphans``). ``decided_here``:
        complete at the packet being taken (an undecided answer, decided by a later one)."""
        correlation_id = _CORRELATION.unpack_from(frame.payload)[0] if len(frame.payload) >= 4 else None
        reading = self.orphan_reading.read(frame.payload)
        header = None
        if reading.pair is not None and correlation_id is not None:
            client_id = next(iter(self.client_ids)) if len(self.client_ids) == 1 else None
            header = new_request_header(0, *reading.pair, correlation_id, client_id, 0)
        # Complete where the response is whole, whatever decided that no request comes (a close, the
        # end): a read that holds its request pairs it there, and the two must name one micro-batch.
        completed_at = frame.last_packet if frame.last_packet is not None else self.at
        if decided_here and self.at is not None:
            completed_at = self.at
        self._emit(
            REQUEST_MISSING,
            None,
            None,
            completed_at=completed_at,
            response_frame=frame,
            response=reading.response,
            header=header,
            correlation_id=correlation_id,
            raw_response=frame.payload if reading.response is None else None,
            error="no captured request has this correlation id",
            note=reading.note,
        )

    # -- what gaps and resyncs leave --------------------------------------------------

    def partial(self, part: Partial, is_request: bool) -> None:
        size = None if part.claimed_size is None else part.claimed_size + 4
        missing = f"frame cut short: {part.reason}"
        if size is not None:
            missing += f" ({len(part.payload) + 4} of {size} bytes present)"
        if is_request:
            header = self._header(part.payload, part.claimed_size) if part.claimed_size is not None else None
            if header is not None:
                decoded = self.ctx.decoder.request_prefix(part.payload)
                self._wait(Pending(part, header, decoded, GAP, read_up_to(missing, decoded, "request")))
            else:
                self._emit(GAP, part, None, error=missing, raw_request=part.payload)
            return
        correlation_id = _CORRELATION.unpack_from(part.payload)[0] if len(part.payload) >= 4 else None
        pending = self.pending.pop(correlation_id, None) if correlation_id is not None else None
        if pending is not None:
            header = pending.header
            response = self.ctx.decoder.response_prefix(part.payload, header.api_key, header.api_version)
            error = pending.error if pending.status == GAP and pending.error else None
            self._emit_pending(
                pending,
                GAP,
                "; ".join(filter(None, (error, read_up_to(missing, response, "response")))),
                response_frame=part,
                response=response,
                raw_response=part.payload,
            )
        else:
            self._emit(
                GAP,
                None,
                None,
                response_frame=part,
                error=missing,
                raw_response=part.payload,
                correlation_id=correlation_id,
            )

    def skipped(self, skip: Skipped, is_request: bool) -> None:
        side = "client" if is_request else "broker"
        if skip.captured:
            error = f"skipped {skip.length} bytes at stream offset {skip.offset} of the {side} side: {skip.reason}"
            span = (skip.offset, skip.length)
        else:
            error = f"{skip.reason} at stream offset {skip.offset} of the {side} side"
            span = (skip.offset, 0)
        frame = Frame(b"", skip.offset, skip.first_ns, skip.first_ns, skip.first_packet, skip.last_packet)
        if is_request:
            self._emit(GAP, frame, None, error=error, request_size=skip.length, request_span=span)
        else:
            self.broker_gap = (skip.first_ns, error)
            self._emit(
                GAP, None, None, response_frame=frame, error=error, response_size=skip.length, response_span=span
            )

    def finish(self, why: str = LEFT_AT_END, at: int | None = None) -> list[Exchange]:
        """Rows for all still pending: the connection closed at packet ``at`` (None: the input ended)."""
        self.at = at
        while self.undecided:
            self._decide_oldest()
        while self.acks0:
            self._no_response(self.acks0.popleft())
        while self.held:
            self._missing(self.held.oldest())
        for pending in list(self.pending.values()):
            error = pending.error or why + self._maybe_lost(pending)
            self._emit_pending(pending, UNANSWERED if pending.status == OK else pending.status, error)
        self.pending.clear()
        while self.sasl_tokens:
            self._emit_sasl(self.sasl_tokens.popleft(), None)
        return self._completed()

    def _maybe_lost(self, pending: Pending) -> str:
        """Where an unanswered request's response may have gone: a gap of the broker side after it."""
        if self.broker_gap is None:
            return ""
        gap_ns, what = self.broker_gap
        sent_ns = pending.frame.first_ns
        if gap_ns is not None and sent_ns is not None and gap_ns < sent_ns:
            return ""
        return f"; its response may be in a gap of the broker side after it ({what})"

    # -- building exchanges -----------------------------------------------------------

    def _emit_pending(self, pending: Pending, status: str, error: str | None, **kw) -> None:
        raw = pending.frame.payload if pending.decoded is None or pending.status != OK else None
        if pending.note:
            kw["note"] = pending.note
        self._emit(status, pending.frame, pending.decoded, error=error, raw_request=raw, header=pending.header, **kw)

    def _emit_sasl(self, token: Frame, reply: Frame | None) -> None:
        self._emit(
            SASL,
            token,
            None,
            response_frame=reply,
            raw_request=token.payload,
            raw_response=reply.payload if reply else None,
            note="SASL token after SaslHandshake v0 (not a Kafka frame)",
        )

    def _emit(self, status: str, frame, decoded: dict | None, **kw) -> None:
        if "completed_at" in kw:
            completed_at = kw.pop("completed_at")
        else:
            completed_at = self._completed_at(frame, kw.get("response_frame"))
        exchange = build_exchange(
            self.ctx, self.ids, self.filtering, status, frame, decoded, completed_at=completed_at, **kw
        )
        if exchange is not None:
            self.out.append(exchange)

    def _completed_at(self, frame, response_frame) -> int | None:
        """Where a row is complete (``Exchange.completed_at``): the packet that decided the item
        being taken, or the latest of its own frames' where later (a response held until its
        request was framed ends after that request). None while the end of the input decides."""
        at, at_ns = self.at, self.at_ns
        if at is None:
            return None
        for part in (frame, response_frame):
            packet = getattr(part, "last_packet", None)
            if packet is not None and later_packet(packet, getattr(part, "last_ns", None), at, at_ns):
                at, at_ns = packet, getattr(part, "last_ns", None)
        return at
