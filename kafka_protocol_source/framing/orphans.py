"""Read a response whose request was not captured, at an api and version its connection uses.

A capture joined mid-connection starts with answers to requests sent before it: the long-poll
Fetch in flight on every consumer connection, a JoinGroup waiting out a rebalance. A response
header holds only the correlation id; what says how to read the body (api key and version) was
in the request. A client settles one version per api for a connection (after ApiVersions), so the
pairs of the connection's captured requests are the candidates. The response is read at each,
strictly: every byte used and nothing that deviates from the spec. When exactly one reads it,
and no version of any other api does (the request not captured may be of an api the captured
ones lack: a Heartbeat v1-3 response is read exactly as a LeaveGroup v1-2 one, both a throttle
time and an error code), that is its api and version. Otherwise (several candidates read it, an
api none of them is reads it too, or none reads it) the body stays raw and the note says why.

A connection none of whose requests was captured (only the broker's side of it was: a mirror
port that copies one direction, a capture filtered on the broker's port as source) has no
candidates: its responses are read at every response version the definitions have
(``read_unasked``). When the versions that read one exactly are all of one api, that is its api
(the response of the request not captured reads exactly as its own api, so no other api's
does). Of several such versions: the one an earlier response of the connection showed alone (a
client keeps one version per api on a connection; ApiVersions aside, which falls back to v0);
else, if they read it the same but for tagged fields (which newer versions know more of), the
version is left unknown and the body is read at the newest; otherwise (a 15-character topic
name reads as a topic id: Fetch v12 as v13+) the body stays raw.

Owns that choice and its note; pairing (``pairing``) owns when a response is given up as
``request_missing`` and the row it becomes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ..spec.api_keys import API_VERSIONS
from .decoding import BodyDecoder, UndecodableBody

# At most this many of a connection's (api key, version) pairs are tried for one response.
MAX_CANDIDATES = 32
# A connection without requests remembers how this many of its response bodies up to this size read.
SEEN_BODIES = 64
SEEN_BODY_SIZE = 1024


@dataclass(frozen=True, slots=True)
class Reading:
    """What a response whose request is missing was read as (``response`` None: left raw)."""

    pair: tuple[int, int | None] | None  # (api key, version) it was read at (version None: one of several alike)
    response: dict | None
    note: str | None


class ConnectionOrphans:
    """What one connection's traffic says about reading its responses whose request is missing:
    the (api key, version) pairs of its captured requests (``used``), the protocol type of the
    group it joins, and, while none of its requests is captured, the version each api's
    responses showed alone and the sweeps of its small bodies."""

    def __init__(self, decoder: BodyDecoder):
        self.decoder = decoder
        self.used: set[tuple[int, int]] = set()
        self.protocol_type: str | None = None
        self.settled: dict[int, int] = {}
        self.seen: OrderedDict[bytes, Sweep] = OrderedDict()

    def read(self, payload: bytes) -> Reading:
        if self.used:
            return read_orphan(self.decoder, payload, self.used, self.protocol_type)
        reading = read_unasked(self.decoder, payload, self.settled, self.protocol_type, self.seen)
        if reading.pair is not None:
            api_key, version = reading.pair
            # (not ApiVersions: a client answered in v0 with an error asks again in v0: KIP-511)
            if version is not None and api_key != API_VERSIONS:
                self.settled.setdefault(api_key, version)
        return reading


def read_orphan(
    decoder: BodyDecoder, payload: bytes, candidates: Collection[tuple[int, int]], protocol_type: str | None = None
) -> Reading:
    """``payload`` read at each of ``candidates`` (the pairs the connection's requests use);
    ``protocol_type``: of the group the connection's requests join, to read embedded data with.

    Which versions read it is asked of the layouts alone (no records decompressed, nothing kept);
    only the one answer, when there is one, is decoded in full."""
    tried = sorted(candidates)[:MAX_CANDIDATES]
    exact = list(decoder.exact_response_bodies(payload, tried))
    if not exact:
        if not tried:
            return Reading(None, None, None)
        listed = ", ".join(_named(decoder, *pair) for pair in tried)
        return Reading(None, None, f"request not captured: none of this connection's requests ({listed}) reads it")
    if len(exact) > 1:
        listed = ", ".join(_named(decoder, *pair) for pair in exact)
        return Reading(None, None, f"request not captured: the response reads exactly as any of {listed}")
    api_key, api_version = exact[0]
    named = _named(decoder, api_key, api_version)
    others = [(api, version) for (api, versions) in _readers(decoder, payload, api_key) for version in versions]
    if others:
        note = (
            f"request not captured: the response reads exactly as {named}, of this connection's requests, and"
            f" as {_listed(decoder, others)}, whose request may be the one not captured"
        )
        return Reading(None, None, note)
    if not decoder.defines_response(api_key, api_version):
        return Reading(
            None, None, f"request not captured: the response reads exactly as {named}, which the definitions lack"
        )
    try:
        context = {"body": {"protocol_type": protocol_type}} if protocol_type else None  # stands for the request
        response = decoder.decode_response(payload, api_key, api_version, context)
    except UndecodableBody as e:  # (its layout reads it: only what is inside could still fail)
        return Reading(None, None, f"request not captured: the response reads as {named} but not whole: {e}")
    note = (
        f"request not captured: the response read as {named}, the only api and version of this"
        " connection's requests that reads it exactly, and no other api does"
    )
    return Reading(exact[0], response, note)


def read_unasked(
    decoder: BodyDecoder,
    payload: bytes,
    settled: Mapping[int, int],
    protocol_type: str | None = None,
    seen: OrderedDict[bytes, Sweep] | None = None,
) -> Reading:
    """``payload`` read at every response version, on a connection none of whose requests was
    captured; ``settled``: api key -> the version earlier responses of the connection were read
    at alone; ``seen``: the sweeps of the connection's earlier small responses (the same answer
    again, an empty Fetch or a Heartbeat's, reads the same: one look at each)."""
    layouts, alike = _sweep(decoder, payload, seen)
    # (of those read up to now: a stream's first micro-batch may end before the connection's requests)
    said = "request not captured, nor any of this connection's requests read so far"
    if not layouts:
        return Reading(None, None, f"{said}: no api and version reads the response exactly")
    api_key = layouts[0][0]
    if any(api != api_key for api, _ in layouts):
        listed = _listed(decoder, [(api, version) for api, versions in layouts for version in versions])
        return Reading(None, None, f"{said}: the response reads exactly as {listed}")
    versions = sorted(version for _, versions in layouts for version in versions)
    named = _named(decoder, api_key, versions[0]) + (f"-{versions[-1]}" if len(versions) > 1 else "")
    if settled.get(api_key) in versions:
        version: int | None = settled[api_key]
        how = f"as {_named(decoder, api_key, settled[api_key])}, of {named}, the version this connection uses"
    elif len(versions) == 1:
        version, how = versions[0], f"as {_named(decoder, api_key, versions[0])} only"
    elif alike:
        version = None
        how = f"alike as {named} (decoded as v{versions[-1]}, which knows the most fields), its version not known"
    else:
        return Reading(None, None, f"{said}: the response reads exactly as {named} only, but not alike")
    if not decoder.defines_response(api_key, versions[-1] if version is None else version):
        return Reading(None, None, f"{said}: the response reads exactly as {named} only, which the definitions lack")
    try:
        context = {"body": {"protocol_type": protocol_type}} if protocol_type else None
        response = decoder.decode_response(payload, api_key, versions[-1] if version is None else version, context)
    except UndecodableBody as e:
        return Reading(None, None, f"{said}: the response reads as {named} but not whole: {e}")
    note = f"{said}: the response read exactly {how}, and as no other api"
    return Reading((api_key, version), response, note)


# The layouts (api key, versions) that read a response exactly, and whether they read it alike.
Sweep = tuple[tuple[tuple[int, tuple[int, ...]], ...], bool]


def _sweep(decoder: BodyDecoder, payload: bytes, seen: OrderedDict[bytes, Sweep] | None) -> Sweep:
    body_bytes = payload[4:]  # (the correlation id does not change how the rest reads)
    found = seen.get(body_bytes) if seen is not None else None
    if found is None:
        bodies = _readers(decoder, payload)
        layouts = tuple(bodies)
        first = layouts[0] if layouts else None
        alike = first is not None and all(
            api == first[0]
            and _alike(
                body,
                bodies[first],
                decoder.response_tagged_fields(api, versions[0]) | decoder.response_tagged_fields(api, first[1][0]),
            )
            for (api, versions), body in bodies.items()
        )
        found = (layouts, alike)
        if seen is not None and len(body_bytes) <= SEEN_BODY_SIZE:
            seen[body_bytes] = found
            if len(seen) > SEEN_BODIES:
                seen.popitem(last=False)
    return found


def _alike(a, b, tagged: frozenset[str]) -> bool:
    """Whether two readings of the same bytes are the same but for tagged fields (``tagged``:
    their names), which one layout knows and the other keeps in ``unknown_tagged_fields``. (A
    15-character topic name reads as a topic id: a name in one and an id in the other differ.)"""
    if isinstance(a, dict) and isinstance(b, dict):
        if not (a.keys() ^ b.keys()) <= tagged | {"unknown_tagged_fields"}:
            return False
        return all(_alike(a[key], b[key], tagged) for key in a.keys() & b.keys() if key != "unknown_tagged_fields")
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_alike(x, y, tagged) for x, y in zip(a, b, strict=True))
    return a == b


def _readers(decoder: BodyDecoder, payload: bytes, but: int | None = None) -> dict[tuple[int, tuple[int, ...]], dict]:
    """(api key, versions laid out alike) -> the body, of every response layout (of apis other
    than ``but``) that reads ``payload`` exactly."""
    layouts = decoder.response_layouts()
    read = decoder.exact_response_bodies(payload, (pair for pair in layouts if pair[0] != but))
    return {(pair[0], layouts[pair]): body for pair, body in read.items()}


def _listed(decoder: BodyDecoder, pairs: list[tuple[int, int]], most: int = 4) -> str:
    """``pairs`` as "Heartbeat v1-3, EndTxn v0-2, ..." (versions of one api as a range)."""
    versions: dict[int, list[int]] = {}
    for api_key, api_version in pairs:
        versions.setdefault(api_key, []).append(api_version)
    said = []
    for api_key, listed in list(versions.items())[:most]:
        low, high = min(listed), max(listed)
        said.append(_named(decoder, api_key, low) + (f"-{high}" if high != low else ""))
    if len(versions) > most:
        said.append(f"{len(versions) - most} more apis")
    return ", ".join(said)


def _named(decoder: BodyDecoder, api_key: int, api_version: int) -> str:
    return f"{decoder.api_name(api_key) or f'api key {api_key}'} v{api_version}"
