"""Pair each response with its request by correlation id, and turn everything into exchanges.

Owns, per connection: requests in flight (pipelined, answered in any order), Produce with
acks=0 (no response expected), responses whose request was not captured, requests left
unanswered, frames that do not decode, frames cut by gaps, bytes skipped to resync, and the raw
SASL tokens that follow a SaslHandshake v0 (KIP-43: not Kafka frames until authentication
ends). Every frame becomes part of exactly one ``Exchange``.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass

from ..codec.errors import DecodeError
from .model import GAP, MALFORMED, NO_RESPONSE, OK, REQUEST_MISSING, SASL, UNANSWERED, Exchange, Frame
from .splitter import Partial, Skipped

_HEADER = struct.Struct(">hhi")
_CORRELATION = struct.Struct(">i")
PRODUCE, SASL_HANDSHAKE = 0, 17


@dataclass(slots=True)
class Pending:
    """A request waiting for its response."""

    frame: Frame | Partial
    api_key: int
    api_version: int
    correlation_id: int
    decoded: dict | None
    status: str = OK
    error: str | None = None


class Pairer:
    def __init__(self, ctx, connection_id: str, client_address: str, broker_address: str):
        self.ctx = ctx
        self.ids = (connection_id, client_address, broker_address)
        self.pending: dict[int, Pending] = {}
        self.sasl_mode = False
        self.sasl_tokens: deque[Frame] = deque()
        self.filtering = ctx.apis is not None or ctx.window_ns is not None
        self.unwanted: set[int] = set()

    def pending_ids(self):
        return self.pending.keys()

    def take(self, items: list, is_request: bool) -> None:
        """What a framer cut from one side: frames, frames cut short, bytes skipped."""
        for item in items:
            if isinstance(item, Skipped):
                self.skipped(item, is_request)
            elif isinstance(item, Partial):
                self.partial(item, is_request)
            elif is_request:
                self.request(item)
            else:
                self.response(item)

    # -- requests ---------------------------------------------------------------------

    def request(self, frame: Frame) -> None:
        if self.filtering:
            header = self._peek_header(frame.payload)
            if header is not None and not self.ctx.wanted(header[0], frame.first_ns):
                self.unwanted.add(header[2])  # not decoded; its response is dropped too
                return
        try:
            decoded = self.ctx.decoder.decode_request(frame.payload, lenient=True)
        except DecodeError as e:
            if self.sasl_mode:
                self.sasl_tokens.append(frame)  # a raw SASL token, not a Kafka request
                return
            self._undecodable_request(frame, e)
            return
        self.sasl_mode = False
        if decoded.get("trailing_bytes"):
            self._wait(Pending(frame, decoded["api_key"], decoded["api_version"], decoded["correlation_id"], decoded,
                               MALFORMED, _leftover("request", decoded)))
            return
        if decoded["api_key"] == PRODUCE and decoded["body"].get("acks") == 0:
            self._emit(NO_RESPONSE, frame, decoded, note=_notes("Produce with acks=0: no response is sent", decoded))
            return
        self._wait(Pending(frame, decoded["api_key"], decoded["api_version"], decoded["correlation_id"], decoded))

    def _undecodable_request(self, frame: Frame, error: DecodeError) -> None:
        header = self._peek_header(frame.payload)
        if header is None:
            self._emit(MALFORMED, frame, None, error=str(error), raw_request=frame.payload)
        else:
            self._wait(Pending(frame, *header, None, MALFORMED, str(error)))

    def _peek_header(self, payload: bytes) -> tuple[int, int, int] | None:
        if len(payload) < _HEADER.size:
            return None
        api_key, version, correlation_id = _HEADER.unpack_from(payload)
        message = self.ctx.decoder.registry.request(api_key)
        if message is None or version not in message.valid_versions:
            return None
        return api_key, version, correlation_id

    def _wait(self, pending: Pending) -> None:
        older = self.pending.pop(pending.correlation_id, None)
        if older is not None:
            self._emit_pending(older, UNANSWERED, "correlation id reused by a later request before any response")
        self.pending[pending.correlation_id] = pending

    # -- responses --------------------------------------------------------------------

    def response(self, frame: Frame) -> None:
        payload = frame.payload
        correlation_id = _CORRELATION.unpack_from(payload)[0] if len(payload) >= 4 else None
        pending = self.pending.pop(correlation_id, None)
        if pending is None and correlation_id in self.unwanted:
            self.unwanted.discard(correlation_id)
            return
        if pending is None:
            if self.sasl_tokens:
                self._emit_sasl(self.sasl_tokens.popleft(), frame)
            else:
                self._emit(REQUEST_MISSING, None, None, response_frame=frame, correlation_id=correlation_id,
                           raw_response=payload, error="no captured request has this correlation id")
            return
        try:
            response = self.ctx.decoder.decode_response(payload, pending.api_key, pending.api_version,
                                                        request=pending.decoded, lenient=True)
        except DecodeError as e:
            self._emit_pending(pending, MALFORMED, str(e) if pending.error is None else f"{pending.error}; {e}",
                               response_frame=frame, raw_response=payload)
            return
        if (pending.api_key == SASL_HANDSHAKE and pending.api_version == 0
                and response["body"].get("error_code") == 0):
            self.sasl_mode = True  # KIP-43: raw tokens follow, without Kafka headers
        status, error = pending.status, pending.error
        if response.get("trailing_bytes"):
            status, error = MALFORMED, "; ".join(filter(None, (error, _leftover("response", response))))
        self._emit_pending(pending, status, error, response_frame=frame, response=response,
                           raw_response=payload if response.get("trailing_bytes") else None)

    # -- what gaps and resyncs leave --------------------------------------------------

    def partial(self, part: Partial, is_request: bool) -> None:
        size = None if part.claimed_size is None else part.claimed_size + 4
        missing = f"frame cut short: {part.reason}"
        if size is not None:
            missing += f" ({len(part.payload) + 4} of {size} bytes present)"
        if is_request:
            header = self._peek_header(part.payload) if part.claimed_size is not None else None
            if header is not None:
                self._wait(Pending(part, *header, None, GAP, missing))
            else:
                self._emit(GAP, part, None, error=missing, raw_request=part.payload)
            return
        correlation_id = _CORRELATION.unpack_from(part.payload)[0] if len(part.payload) >= 4 else None
        pending = self.pending.pop(correlation_id, None)
        if pending is not None:
            self._emit_pending(pending, GAP, missing, response_frame=part, raw_response=part.payload)
        else:
            self._emit(GAP, None, None, response_frame=part, error=missing, raw_response=part.payload,
                       correlation_id=correlation_id)

    def skipped(self, skip: Skipped, is_request: bool) -> None:
        error = f"skipped {skip.length} bytes at stream offset {skip.offset} of the {'client' if is_request else 'broker'} side: {skip.reason}"
        frame = Frame(b"", skip.offset, skip.first_ns, skip.first_ns, skip.first_packet)
        if is_request:
            self._emit(GAP, frame, None, error=error, request_size=skip.length)
        else:
            self._emit(GAP, None, None, response_frame=frame, error=error, response_size=skip.length)

    def finish(self, why: str = "no response before the end of the capture") -> None:
        for pending in list(self.pending.values()):
            self._emit_pending(pending, UNANSWERED if pending.status == OK else pending.status, pending.error or why)
        self.pending.clear()
        while self.sasl_tokens:
            self._emit_sasl(self.sasl_tokens.popleft(), None)

    # -- building exchanges -----------------------------------------------------------

    def _emit_pending(self, pending: Pending, status: str, error: str | None, **kw) -> None:
        raw = pending.frame.payload if pending.decoded is None or pending.status != OK else None
        self._emit(status, pending.frame, pending.decoded, error=error, raw_request=raw,
                   api=(pending.api_key, pending.api_version, pending.correlation_id), **kw)

    def _emit_sasl(self, token: Frame, reply: Frame | None) -> None:
        self._emit(SASL, token, None, response_frame=reply, raw_request=token.payload,
                   raw_response=reply.payload if reply else None,
                   note="SASL token after SaslHandshake v0 (not a Kafka frame)")

    def _emit(self, status: str, frame, decoded: dict | None, *, response_frame=None, response: dict | None = None,
              error: str | None = None, note: str | None = None, raw_request=None, raw_response=None,
              api=None, correlation_id=None, request_size=None, response_size=None) -> None:
        ctx = self.ctx
        connection_id, client, broker = self.ids
        if decoded is not None:
            api = (decoded["api_key"], decoded["api_version"], decoded["correlation_id"])
        api_key, api_version, corr = api or (None, None, correlation_id)
        start_ns = getattr(frame, "first_ns", None)
        if self.filtering and not ctx.wanted(api_key, start_ns):
            return
        end_ns = getattr(response_frame, "last_ns", None) if isinstance(response_frame, Frame) else getattr(response_frame, "first_ns", None)
        complete = isinstance(response_frame, Frame) and isinstance(frame, Frame)
        latency = (end_ns - start_ns) / 1e6 if complete and start_ns is not None and end_ns is not None else None
        if decoded is not None or response is not None:
            note = _notes(note, decoded, response)
        ctx.out.append(Exchange(
            capture_file=ctx.capture_file, connection_id=connection_id, client_address=client, broker_address=broker,
            request_time=ctx.time(start_ns), response_time=ctx.time(end_ns), latency_ms=latency,
            api_key=api_key, api_name=ctx.decoder.registry.api_name(api_key) if api_key is not None else None,
            api_version=api_version, correlation_id=corr,
            client_id=decoded["client_id"] if decoded else None,
            request_size=request_size if request_size is not None else _frame_size(frame),
            response_size=response_size if response_size is not None else _frame_size(response_frame),
            request=decoded["body"] if decoded else None, response=response["body"] if response else None,
            status=status, error=error, note=note, raw_request=raw_request, raw_response=raw_response,
            request_packet=getattr(frame, "first_packet", None), response_packet=getattr(response_frame, "first_packet", None),
            stream_offset=getattr(frame, "offset", None) if frame is not None else getattr(response_frame, "offset", None),
        ))


def _notes(note: str | None, *decoded: dict | None) -> str | None:
    """Join an exchange's note with what decoding had to say (fallbacks, ignored trailing bytes)."""
    notes = [note] if note else []
    for d in decoded:
        if d is not None and d.get("note"):
            notes.append(d["note"])
    return "; ".join(dict.fromkeys(notes)) or None


def _leftover(side: str, decoded: dict) -> str:
    return (f"{decoded['trailing_bytes']} bytes left after the {side} body: the frame does not match the spec "
            f"(the body as decoded is kept)")


def _frame_size(frame) -> int | None:
    if frame is None:
        return None
    if isinstance(frame, Partial):
        return (frame.claimed_size + 4) if frame.claimed_size is not None else len(frame.payload)
    return len(frame.payload) + 4
