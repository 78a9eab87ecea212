"""Cheap looks at raw bytes: does a Kafka request, a response, or TLS start here?

These decide where frames start when a capture joins a connection mid-stream or after a gap,
which side of a connection is the client, and whether traffic on an unconfigured port is Kafka
at all. They read headers, and know the protocol's api keys and versions from a table the
caller hands in (the bundled one, so that a partial or forked definitions file changes how
bodies decode, not which bytes are Kafka). The one body they look at is that of a request start
about to be confirmed, through a reader the caller may hand in: the last frame of a request can
hold bytes that pass for a whole frame of their own.

A start check answers, for a position in a buffer, one of:

* ``CONFIRMED``: a frame starts here and something beyond its header says so: the frames from
  here chain exactly to a packet boundary, or a response's correlation id is one we wait for;
* ``MAYBE``: the header is plausible but the bytes that would confirm it have not arrived;
* ``NO``: no frame starts here.
"""

from __future__ import annotations

import itertools
import re
import struct
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from ..capture.model import fast_constructor
from ..spec.api_keys import API_VERSIONS

_SIZE = struct.Struct(">i")
_REQUEST_START = struct.Struct(">ihhi")  # size, api key, version, correlation id
_RESPONSE_START = struct.Struct(">ii")  # size, correlation id
_CLIENT_ID_LENGTH = struct.Struct(">h")
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")

NO, MAYBE, CONFIRMED = 0, 1, 2
MIN_REQUEST = 8  # api key, version, correlation id (header v0 has no client id)
MIN_RESPONSE = 4  # correlation id
# Headers of apis and versions beyond the bundled ones are still read (a newer Kafka, a vendor
# extension), within these bounds.
MAX_API_KEY = 0x3FFF
MAX_API_VERSION = 0x7F
# While resynchronising, a client id longer than this is accepted only if the connection already
# used it: 20-kB "client ids" are what random bytes that happen to pass as a header look like.
PLAUSIBLE_CLIENT_ID = 1024
# Consecutive responses on one connection carry correlation ids this close: brokers answer in order,
# clients count up by one per request (a few acks=0 Produce requests in between have no answer).
RESPONSE_STEP = 64

# (buffer, position, final, boundary) -> NO, MAYBE or CONFIRMED. ``final``: no more bytes will
# follow; ``boundary(p)``: whether a packet's bytes end at buffer position p.
StartCheck = Callable[..., int]


class ApiVersionsTable(Protocol):
    """Which api keys and request versions the protocol has, and which use header v0."""

    def knows(self, api_key: int, version: int) -> bool: ...
    def has_client_id(self, api_key: int, version: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class KnownApis:
    """The request versions a registry defines, as a table the sniffers can consult quickly."""

    versions: dict[int, frozenset[int]]
    header_v0: frozenset[tuple[int, int]]

    @classmethod
    def from_registry(cls, registry, header_version) -> KnownApis:
        versions: dict[int, frozenset[int]] = {}
        v0: set[tuple[int, int]] = set()
        for key in registry.api_keys():
            message = registry.request(key)
            valid = frozenset(message.valid_versions.versions(cap=MAX_API_VERSION))
            versions[key] = valid
            v0.update((key, v) for v in valid if header_version(message, v) == 0)
        return cls(versions, frozenset(v0))

    def knows(self, api_key: int, version: int) -> bool:
        valid = self.versions.get(api_key)
        return valid is not None and version in valid

    def has_client_id(self, api_key: int, version: int) -> bool:
        return (api_key, version) not in self.header_v0


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The part of a request header every version shares (client id absent for header v0)."""

    size: int  # frame size without the prefix
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_size: int  # bytes after the size prefix up to the end of the client id


new_request_header = fast_constructor(RequestHeader)  # one per request: skips the frozen __init__


def read_request_header(
    buf, pos: int, known: ApiVersionsTable, *, strict: bool, max_frame_size: int, client_id_limit: int | None = None
):
    """The request header at ``pos`` (size prefix included), ``False`` if none, ``None`` if cut.

    ``strict``: only api keys and versions the table knows; otherwise any in the plausible ranges
    (the header layout up to the client id is the same for every version with one).
    """
    left = len(buf) - pos
    if left < 12:
        return None
    size, api_key, version, correlation_id = _REQUEST_START.unpack_from(buf, pos)
    if size < MIN_REQUEST or size > max_frame_size or correlation_id < 0:
        return False
    if strict:
        if not known.knows(api_key, version):
            return False
    elif not (0 <= api_key <= MAX_API_KEY and 0 <= version <= MAX_API_VERSION):
        return False
    if not known.has_client_id(api_key, version):
        return RequestHeader(size, api_key, version, correlation_id, None, 8)
    if left < 14:
        return None
    (client_len,) = _CLIENT_ID_LENGTH.unpack_from(buf, pos + 12)
    if client_len < -1 or 10 + max(client_len, 0) > size:
        return False
    if client_id_limit is not None and client_len > client_id_limit:
        return False
    if left < 14 + max(client_len, 0):
        return None
    raw = bytes(buf[pos + 14 : pos + 14 + max(client_len, 0)])
    if _CONTROL.search(raw):
        return False  # client ids are text
    try:
        client_id = None if client_len < 0 else raw.decode()
    except UnicodeDecodeError:
        return False
    return RequestHeader(size, api_key, version, correlation_id, client_id, 10 + max(client_len, 0))


def request_start_check(
    known: ApiVersionsTable,
    max_frame_size: int,
    client_ids: Collection[str | None] = (),
    body_reads: Callable[[bytes], bool] | None = None,
) -> StartCheck:
    """A start check for client->broker bytes.

    A candidate needs a header of an api key and version the table knows, with a text client
    id. It is confirmed when the frames from it (the later ones of any plausible api: clients
    newer than our tables exist) chain exactly to a packet boundary: a client writes whole
    requests, so frame ends fall on segment ends, while bytes inside a body that only look like
    a header (an ApiVersions answer is a table of small integers) chain to one by chance alone.
    Trailing bytes inside a frame do not matter. A client id of unusual length must be one the
    connection used before (``client_ids``, which the caller may keep growing).

    ``body_reads(frame)``, if given, must also say that the candidate's own frame (header and body,
    no size prefix) reads. A Produce request ends with its records: the field's size and a
    batch's zero base offset read as a header (Produce v0, correlation id 0, an empty client id)
    of a frame that ends where the request does, on a packet boundary; its body does not read.
    """

    def first(buf, pos: int):
        head = read_request_header(
            buf,
            pos,
            known,
            strict=True,
            max_frame_size=max_frame_size,
            client_id_limit=None if client_ids else PLAUSIBLE_CLIENT_ID,
        )
        if head and client_ids and head.client_id not in client_ids and len(head.client_id or "") > PLAUSIBLE_CLIENT_ID:
            return False
        return head

    def following(buf, pos: int):
        return read_request_header(buf, pos, known, strict=False, max_frame_size=max_frame_size)

    def check(buf, pos: int, final: bool, boundary: Callable[[int], bool]) -> int:
        verdict = _chain(buf, pos, final, boundary, first, following)
        if verdict == CONFIRMED and body_reads is not None:
            (size,) = _SIZE.unpack_from(buf, pos)
            if not body_reads(bytes(buf[pos + 4 : pos + 4 + size])):
                return NO
        return verdict

    return check


def response_start_check(max_frame_size: int, pending_ids: Callable[[], Collection[int]]) -> StartCheck:
    """A start check for broker->client bytes: a size, then a correlation id.

    Confirmed when the frames from it chain exactly to a packet boundary with correlation ids
    that count up by small steps or are ones ``pending_ids()`` waits for (a broker answers a
    connection's requests in order). A pending id alone proves nothing: small integers such as
    1, 2, 3 fill response bodies.
    """

    def first(buf, pos: int):
        if len(buf) - pos < 8:
            return None
        size, correlation_id = _RESPONSE_START.unpack_from(buf, pos)
        if size < MIN_RESPONSE or size > max_frame_size or correlation_id < 0:
            return False
        return _Response(size, correlation_id, correlation_id in pending_ids())

    def check(buf, pos: int, final: bool, boundary: Callable[[int], bool]) -> int:
        head = first(buf, pos)
        last = [head.correlation_id if head else 0]

        def following(buf, at: int):
            nxt = first(buf, at)
            if not nxt:
                return nxt
            if nxt.pending or 0 < nxt.correlation_id - last[0] <= RESPONSE_STEP:
                last[0] = nxt.correlation_id
                return nxt
            return False

        return _chain(buf, pos, final, boundary, lambda b, p: head, following)

    return check


@dataclass(frozen=True, slots=True)
class _Response:
    size: int
    correlation_id: int
    pending: bool


CutStart = Callable[[Any, int], bool]  # (buffer, position) -> whether a cut frame plausibly starts there


def request_cut_start(check: StartCheck) -> CutStart:
    """Whether a request plausibly starts at ``pos`` though a gap cut the bytes that would confirm
    it: a header of an api and version the table knows, with a text client id."""
    return lambda buf, pos: check(buf, pos, False, _nowhere) != NO


def response_cut_start(max_frame_size: int, pending_ids: Callable[[], Collection[int]]) -> CutStart:
    """Whether a response plausibly starts at ``pos`` though a gap cut the bytes that would
    confirm it: a plausible size, and a correlation id a captured request waits for."""

    awaited = awaited_response(max_frame_size, pending_ids)
    return lambda buf, pos: awaited(buf, pos) is not None


AnswerAt = Callable[[Any, int], "int | None"]  # (buffer, position) -> the pending id a response there answers


def awaited_response(max_frame_size: int, pending_ids: Callable[[], Collection[int]]) -> AnswerAt:
    """The correlation id of the response whose header is at ``pos``, if it is plausible and a
    captured request waits for it; else None."""

    def awaited(buf, pos: int) -> int | None:
        if len(buf) - pos < 8:
            return None
        size, correlation_id = _RESPONSE_START.unpack_from(buf, pos)
        return correlation_id if MIN_RESPONSE <= size <= max_frame_size and correlation_id in pending_ids() else None

    return awaited


def _nowhere(_pos: int) -> bool:
    return False


MAX_CHAIN = 64  # frames followed from a candidate before giving up on reaching a packet boundary


def _chain(buf, pos: int, final: bool, boundary: Callable[[int], bool], first, following) -> int:
    """Follow frames from ``pos`` (``first`` reads the candidate's header, ``following`` the later
    ones; each returns a header, False or None when cut) until one ends on a packet boundary."""
    head = first(buf, pos)
    if not head:
        return MAYBE if head is None and not final else NO
    end = pos + 4 + head.size
    for _ in range(MAX_CHAIN):
        if end > len(buf):
            return NO if final else MAYBE
        if boundary(end):
            return CONFIRMED
        nxt = following(buf, end)
        if nxt is None:
            return NO if final else MAYBE
        if not nxt:
            return NO
        end += 4 + nxt.size
    return NO


def first_confirmed(
    check: StartCheck,
    buf,
    start: int,
    final: bool,
    boundary: Callable[[int], bool],
    past: Callable[[int], int] | None = None,
) -> tuple[int | None, int]:
    """The first position from ``start`` where ``check`` confirms a frame, and where to resume.

    Returns ``(position or None, resume)``: ``resume`` is the first position not yet ruled out
    (a later call with more bytes can start there). ``past(p)``: the first position from p where
    a frame may start (the caller's bytes that are not there are passed over at once).
    """
    pos, resume = start, None
    end = len(buf) - 4
    while pos <= end:
        if past is not None:
            pos = past(pos)
            if pos > end:
                break
        verdict = check(buf, pos, final, boundary)
        if verdict == CONFIRMED:
            return pos, pos if resume is None else resume
        if verdict == MAYBE and resume is None:
            resume = pos
        pos += 1
    return None, (pos if resume is None else resume)


def chained_ids(buf, pos: int, size_at: Callable[[int], tuple[int, int] | None], limit: int = 16) -> list[int]:
    """Correlation ids of the frames that chain from ``pos`` (``size_at(p)``: (size, id) or None)."""
    ids: list[int] = []
    while len(ids) < limit:
        found = size_at(pos)
        if found is None:
            break
        size, correlation_id = found
        ids.append(correlation_id)
        pos += 4 + size
    return ids


def chained_requests(buf, pos: int, limit: int = 16) -> list[tuple[int, int, int]]:
    """(api key, version, correlation id) of the request headers that chain from ``pos``."""
    out: list[tuple[int, int, int]] = []
    while len(out) < limit and len(buf) - pos >= 12:
        size, api_key, version, correlation_id = _REQUEST_START.unpack_from(buf, pos)
        if size < MIN_REQUEST:
            break
        out.append((api_key, version, correlation_id))
        pos += 4 + size
    return out


def kafka_like(requests: list[tuple[int, int, int]]) -> bool:
    """Whether a run of request headers is what a Kafka client sends: correlation ids counting up
    by small steps, and each api at one version (a client picks it once per connection; but it
    asks ApiVersions again at the version a broker that refused the first says). Bytes of another
    protocol read as headers (ZooKeeper's: ``Produce`` at versions 1, 2, 3, the same correlation
    id) are not."""
    versions: dict[int, int] = {}
    for api_key, version, _ in requests:
        if api_key != API_VERSIONS and versions.setdefault(api_key, version) != version:
            return False
    ids = [correlation_id for _, _, correlation_id in requests]
    return all(0 < b - a <= RESPONSE_STEP for a, b in itertools.pairwise(ids))


def request_ids_at(buf, pos: int) -> tuple[int, int] | None:
    if len(buf) - pos < 12:
        return None
    size, _, _, correlation_id = _REQUEST_START.unpack_from(buf, pos)
    return (size, correlation_id) if size >= MIN_REQUEST else None


def response_ids_at(buf, pos: int) -> tuple[int, int] | None:
    if len(buf) - pos < 8:
        return None
    size, correlation_id = _RESPONSE_START.unpack_from(buf, pos)
    return (size, correlation_id) if size >= MIN_RESPONSE else None


def looks_like_tls(data: bytes) -> bool:
    """A TLS record header: change cipher spec, alert, handshake or application data (20-23), version 3.x.

    No Kafka frame starts like this: the size prefix would claim over 300 MiB.
    """
    if len(data) < 5 or not 0x14 <= data[0] <= 0x17 or data[1] != 3 or data[2] > 4:
        return False
    return 0 < int.from_bytes(data[3:5], "big") <= 18432
