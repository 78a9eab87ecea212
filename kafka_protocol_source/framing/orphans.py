"""Read a response whose request was not captured, at an api and version its connection uses.

A capture joined mid-connection starts with answers to requests sent before it: the long-poll
Fetch in flight on every consumer connection, a JoinGroup waiting out a rebalance. A response
header holds only the correlation id; what says how to read the body (api key and version) was
in the request. A client settles one version per api for a connection (after ApiVersions), so the
pairs of the connection's captured requests are the candidates. The response is read at each,
strictly: every byte used and nothing that deviates from the spec. When exactly one reads it,
that is its api and version. When several do (a Heartbeat and a LeaveGroup v0 response are both
an error code alone) or none does, the body stays raw and the note says why.

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

    api_key: int | None
    api_version: int | None
    response: dict | None
    note: str | None


def read_orphan(
    decoder: BodyDecoder, payload: bytes, candidates: Collection[tuple[int, int]], context: dict | None = None
) -> Reading:
    """``payload`` read at each of ``candidates`` (the pairs the connection's requests use);
    ``context``: what stands for the request in reading embedded data (the group's protocol type)."""
    tried = sorted(candidates)[:MAX_CANDIDATES]
    exact = [(pair, found) for pair in tried if (found := _exactly(decoder, payload, pair, context)) is not None]
    if len(exact) == 1:
        (api_key, api_version), response = exact[0]
        note = (
            f"request not captured: the response read as {_named(decoder, api_key, api_version)}, the only api and"
            " version of this connection's requests that reads it exactly"
        )
        return Reading(api_key, api_version, response, note)
    if exact:
        listed = ", ".join(_named(decoder, *pair) for pair, _ in exact)
        return Reading(None, None, None, f"request not captured: the response reads exactly as any of {listed}")
    if tried:
        listed = ", ".join(_named(decoder, *pair) for pair in tried)
        note = f"request not captured: none of this connection's requests ({listed}) reads it"
        return Reading(None, None, None, note)
    return Reading(None, None, None, None)


def _exactly(decoder: BodyDecoder, payload: bytes, pair: tuple[int, int], context: dict | None) -> dict | None:
    api_key, api_version = pair
    if not decoder.defines_response(api_key, api_version):
        return None
    try:
        found = decoder.decode_response(payload, api_key, api_version, context)
    except UndecodableBody:
        return None
    if found.get("trailing_bytes") or found.get("deviations") or found.get("body_version", api_version) != api_version:
        return None
    return found


def _named(decoder: BodyDecoder, api_key: int, api_version: int) -> str:
    return f"{decoder.api_name(api_key) or f'api key {api_key}'} v{api_version}"
