"""Known deviations of real peers from the spec, explained where a user looks: the row's note.

Each entry names a peer, what it sends, and what real clients do with it, so that a
``malformed`` row that is a known quirk reads as one. Matching is by api key, version range,
direction and the kind of deviation; it explains, it never changes a status (the exchanges view's
``outcome`` calls a ``malformed`` row it explains ``peer_quirk``: it did what was asked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..spec.api_keys import API_VERSIONS, METADATA, SYNC_GROUP
from .model import MALFORMED


@dataclass(frozen=True)
class Quirk:
    api_key: int
    versions: range
    side: str  # "request" or "response"
    kind: str  # "trailing_bytes" or "null"
    note: str


QUIRK = "known peer quirk: "  # how a note naming one begins


# How exchange_build.deviation_error ends what it says of one side, and how it says each deviation.
_DEVIATED = ": the frame does not match the spec (the body as decoded is kept)"
_SIDE = re.compile(r"(?:\d+ bytes left after the (request|response) body|(request|response) .+)")


def known_deviation(status: str, error: str | None, note: str | None) -> bool:
    """Whether a row is ``malformed`` only as known peers deviate: its bodies decoded, and real
    clients accept them (the exchanges view's outcome ``peer_quirk``, or ``error_response``)."""
    return status == MALFORMED and explained(error, note)


def explained(error: str | None, note: str | None) -> bool:
    """Whether everything a row's error says went wrong is a deviation of a side whose known peer
    quirk its note names (a padded request beside a response with bytes nothing explains is not)."""
    if not error or not note or QUIRK not in note or not error.endswith(_DEVIATED):
        return False
    sides = {quirk.side for quirk in KNOWN if quirk.note in note}
    for said in error.split(_DEVIATED)[:-1]:
        for part in said.removeprefix("; ").split("; "):
            match = _SIDE.fullmatch(part)
            if match is None or (match.group(1) or match.group(2)) not in sides:
                return False
    return True


KNOWN = (
    Quirk(
        API_VERSIONS,
        range(3, 100),
        "response",
        "trailing_bytes",
        f"{QUIRK}librdkafka's mock cluster (rdkafka_mock) answers ApiVersions v3+, which it does not "
        "support, with an empty api_keys array and then its ApiVersions entry (api key 18, versions 0-2) "
        "as v0 lays it out: the fields after error_code are read from those bytes (throttle_time_ms takes "
        "the entry's); clients read the error code and ask again at v0",
    ),
    Quirk(
        METADATA,
        range(13, 14),
        "response",
        "trailing_bytes",
        f"{QUIRK}librdkafka's mock cluster (rdkafka_mock) appends a byte after Metadata v13 "
        "responses; clients ignore it",
    ),
    Quirk(
        API_VERSIONS,
        range(0, 1),
        "request",
        "trailing_bytes",
        f"{QUIRK}librdkafka pads ApiVersions v0 requests with 4 zero bytes; brokers ignore them",
    ),
    Quirk(
        9,
        range(0, 8),
        "response",
        "null",
        f"{QUIRK}librdkafka's mock cluster answers OffsetFetch with a null (-1) topics array, "
        "which the spec does not allow; clients read it as empty",
    ),
    Quirk(
        SYNC_GROUP,
        range(0, 100),
        "response",
        "null",
        f"{QUIRK}librdkafka's mock cluster answers a follower's SyncGroup with a null assignment, "
        "which the spec does not allow; its client reads it as no assignment",
    ),
)


def explain(api_key: int | None, version: int | None, side: str, decoded: dict | None) -> str | None:
    """The known quirk a decoded frame shows, if any."""
    if decoded is None or api_key is None or version is None:
        return None
    kinds = {"trailing_bytes"} if decoded.get("trailing_bytes") else set()
    if decoded.get("deviations"):
        kinds.add("null")
    for quirk in KNOWN:
        if quirk.api_key == api_key and version in quirk.versions and quirk.side == side and quirk.kind in kinds:
            return quirk.note
    return None
