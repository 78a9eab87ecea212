"""Values of the framing stage: frames cut from a byte stream, and the exchanges they pair into.

Owns the shapes only. ``Exchange`` is the public unit of ``read_capture``: one request with its
response, or one frame (or run of skipped bytes) that could not be paired, with a ``status``
saying which. Every Kafka frame found in a capture ends up in exactly one exchange.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..capture.model import fast_constructor

# Exchange.status values
OK = "ok"  # request and response, both decoded
NO_RESPONSE = "no_response"  # a request that expects none (Produce with acks=0)
UNANSWERED = "unanswered"  # no response by the end of the capture
LEFT_AT_END = "no response before the end of the capture"  # how an unanswered row's error begins there
# What an unanswered row's error adds where the broker's side never spoke: the capture went one way.
BROKER_NEVER_SEEN = (
    "; the capture holds no byte of the broker's side of this connection (taken one way only, e.g. "
    "a filter on the destination port, or a mirror of one direction): its answers were not captured"
)
REQUEST_MISSING = "request_missing"  # a response whose request was not captured
MALFORMED = "malformed"  # a frame that does not decode (see error, raw bytes kept)
GAP = "gap"  # bytes missing from the capture, or skipped to resync
SASL = "sasl"  # raw SASL tokens after SaslHandshake v0 (not Kafka frames)
TLS = "tls"  # an encrypted connection: nothing to decode
UNKNOWN_API = "unknown_api"  # an api key or version the definitions in use lack: paired, raw bytes kept
CAPTURE_ERROR = "capture_error"  # a problem with the file itself (truncated, corrupt, not a capture)
INTERNAL_ERROR = "internal_error"  # a bug of ours while reading one connection; the rest is still read
STATUSES = (
    OK,
    NO_RESPONSE,
    UNANSWERED,
    REQUEST_MISSING,
    MALFORMED,
    GAP,
    SASL,
    TLS,
    UNKNOWN_API,
    CAPTURE_ERROR,
    INTERNAL_ERROR,
)
# What PERMISSIVE keeps, DROPMALFORMED drops and FAILFAST fails on: frames or files that did not read.
MALFORMED_STATUSES = frozenset({MALFORMED, GAP, CAPTURE_ERROR, INTERNAL_ERROR})
FAILFAST_ERROR = "[MALFORMED_RECORD_IN_PARSING] kafka-wire (mode FAILFAST)"  # how a FAILFAST read's error begins

# What a ``gap`` row's error says of a body the capture cut and that was read up to the cut.
CUT_BODY = "the {side} holds its fields up to the cut"


def body_cut(ex, side: str) -> bool:
    """Whether ``ex``'s request (``side`` "request") or response holds only the fields before a
    cut: a view must not take a field it lacks for one the peer did not send."""
    return ex.status == GAP and ex.error is not None and CUT_BODY.format(side=side) in ex.error


@dataclass(frozen=True, slots=True)
class Frame:
    """One size-prefixed frame (payload without the 4-byte size) of one direction."""

    payload: bytes
    offset: int  # stream offset of the size prefix
    # Capture times of the packets carrying its first and its last byte, and the index of that
    # first packet in the capture file; None where no packet carried it (a dump, bytes never captured).
    first_ns: int | None
    last_ns: int | None
    first_packet: int | None
    # The latest packet (highest index) that carried any of its bytes: where the frame was whole,
    # in every read of the capture that has it, however late a read joining mid-stream framed it.
    last_packet: int | None = None


@dataclass(frozen=True, slots=True)
class Exchange:
    capture_file: str
    connection_id: str | None  # None on a capture_error row (it belongs to no connection)
    client_address: str | None  # "ip:port"
    broker_address: str | None
    request_time: datetime | None  # UTC; first byte of the request
    response_time: datetime | None  # UTC; last byte of the response
    latency_ms: float | None
    api_key: int | None
    api_name: str | None
    api_version: int | None
    correlation_id: int | None
    client_id: str | None
    request_size: int | None  # frame bytes including the size prefix
    response_size: int | None
    request: dict | None  # decoded body
    response: dict | None  # decoded body
    status: str
    error: str | None = None
    note: str | None = None  # e.g. an ApiVersions response read at v0
    raw_request: bytes | None = None  # kept when the request did not decode (or was not Kafka)
    raw_response: bytes | None = None
    request_packet: int | None = None  # index of the packet carrying the request's first byte
    response_packet: int | None = None
    stream_offset: int | None = None  # stream offset of the first frame byte in its direction
    # (stream offset, bytes) of each direction's captured bytes this row accounts for: every
    # captured payload byte of a Kafka connection lies in exactly one row's span
    request_span: tuple[int, int] | None = None
    response_span: tuple[int, int] | None = None
    # Where the row was complete, by its content: global index (see CaptureContext.locate) of
    # the packet whose bytes completed it (the latest packet of its frames, or of the frame that
    # decided it, as a later response decides a Produce with acks=0 got none), or of the packet
    # that closed its connection; None when only the end of the input did (still open then).
    # Every read that completes the row names the same packet, wherever it started and however
    # long it held bytes before framing them: the streaming reader emits each row once, in the
    # micro-batch holding this packet.
    completed_at: int | None = None
    # The file holding the response's first byte, where that is another file than capture_file's
    # (one capture per direction); None where it is the same, or there is no response.
    response_file: str | None = None


# Built once per frame and once per row: without the frozen __init__'s setattr per field (see
# fast_constructor). Same arguments as the classes.
new_frame = fast_constructor(Frame)
new_exchange = fast_constructor(Exchange)
