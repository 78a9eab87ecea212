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

Owns that choice and its note; pairing (``pairing``) owns when a response is given up as
``request_missing`` and the row it becomes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from .decoding import BodyDecoder, UndecodableBody

# At most this many of a connection's (api key, version) pairs are tried for one response.
MAX_CANDIDATES = 32


@dataclass(frozen=True, slots=True)
class Reading:
    """What a response whose request is missing was read as (``response`` None: left raw)."""

    pair: tuple[int, int] | None  # (api key, version) it was read at
    response: dict | None
    note: str | None


def read_orphan(
    decoder: BodyDecoder, payload: bytes, candidates: Collection[tuple[int, int]], protocol_type: str | None = None
) -> Reading:
    """``payload`` read at each of ``candidates`` (the pairs the connection's requests use);
    ``protocol_type``: of the group the connection's requests join, to read embedded data with.

    Which versions read it is asked of the layouts alone (no records decompressed, nothing kept);
    only the one answer, when there is one, is decoded in full."""
    tried = sorted(candidates)[:MAX_CANDIDATES]
    exact = [pair for pair in tried if decoder.reads_response_exactly(payload, *pair)]
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
    others = [
        pair
        for pair in decoder.response_versions()
        if pair[0] != api_key and decoder.reads_response_exactly(payload, *pair)
    ]
    if others:
        note = (
            f"request not captured: the response reads exactly as {named}, of this connection's requests, and"
            f" as {_listed(decoder, others)}, whose request may be the one not captured"
        )
        return Reading(None, None, note)
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
