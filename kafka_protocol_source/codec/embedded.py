"""Bytes fields that hold another Kafka structure, decoded beside the raw bytes.

* JoinGroup / SyncGroup of a group whose protocol type is ``consumer``: member metadata is a
  ConsumerProtocolSubscription and assignments are ConsumerProtocolAssignment (both prefixed
  with an int16 version; ConsumerProtocol.java reads a newer version at the newest one it knows
  and ignores what follows).
* KRaft control records (KIP-595, KIP-630, KIP-853): LeaderChangeMessage, snapshot header and
  footer, KRaftVersionRecord and VotersRecord values, for the records stage.
* EnvelopeRequest (KIP-590): ``request_data`` is a whole request (header + body) and
  ``request_principal`` a version-prefixed DefaultPrincipalData; the EnvelopeResponse's
  ``response_data`` is the response to that inner request.

The decoded value goes in ``<field>_decoded``; if the bytes do not decode, ``<field>_error``
says why and the raw bytes stay as they are.
"""

from __future__ import annotations

import struct

from ..spec.api_keys import ENVELOPE, JOIN_GROUP, SYNC_GROUP
from .errors import DecodeError

# Control record types whose value is a version-prefixed data message (ControlRecordType.java).
KRAFT_CONTROL_DATA = {
    2: "LeaderChangeMessage",
    3: "SnapshotHeaderRecord",
    4: "SnapshotFooterRecord",
    5: "KRaftVersionRecord",
    6: "VotersRecord",
}
_VERSION = struct.Struct(">h")


def decode_versioned(decoder, name: str, data: bytes) -> dict:
    """An int16 version, then ``name`` at that version (at the newest known, if newer)."""
    if len(data) < 2:
        raise DecodeError(f"{len(data)} bytes cannot hold a version prefix", api_name=name, direction="data", offset=0)
    (version,) = _VERSION.unpack_from(data)
    valid = decoder.registry.message(name).valid_versions
    if version < valid.low:
        raise DecodeError(f"unknown version {version}", api_name=name, api_version=version, direction="data", offset=0)
    newer = version > valid.high
    body = decoder.parse_message(name, min(version, valid.high), data[2:], whole=not newer)
    return {"version": version, **body}


def decode_control_data(decoder, type_id: int, value: bytes) -> dict | None:
    """The data of a KRaft control record (the records stage's ``decode_control`` hook).

    Unlike the version-prefixed messages above, these carry their version as their own first
    field (``Version``, int16), so the whole value is read at that version.
    """
    name = KRAFT_CONTROL_DATA.get(type_id)
    if name is None:
        return None
    if len(value) < 2:
        raise DecodeError(f"{len(value)} bytes cannot hold a Version field", api_name=name, direction="data", offset=0)
    (version,) = _VERSION.unpack_from(value)
    valid = decoder.registry.message(name).valid_versions
    read_at = min(max(version, valid.low), valid.high)
    return decoder.parse_message(name, read_at, value, whole=version <= valid.high)


def decode_embedded(
    decoder, result: dict, direction: str, *, request: dict | None = None, protocol_type: str | None = None
) -> None:
    api_key, body = result["api_key"], result["body"]
    request_body = (request or {}).get("body") or {}
    protocol_type = body.get("protocol_type") or request_body.get("protocol_type") or protocol_type
    if api_key == JOIN_GROUP and protocol_type == "consumer":
        items = body.get("protocols" if direction == "request" else "members") or ()
        _each(decoder, items, "metadata", "ConsumerProtocolSubscription")
    elif api_key == SYNC_GROUP and protocol_type == "consumer":
        if direction == "request":
            _each(decoder, body.get("assignments") or (), "assignment", "ConsumerProtocolAssignment")
        else:
            _each(decoder, (body,), "assignment", "ConsumerProtocolAssignment")
    elif api_key == ENVELOPE and direction == "request":
        _one(body, "request_data", lambda data: decoder.decode_request(data))
        _one(body, "request_principal", lambda data: decode_versioned(decoder, "DefaultPrincipalData", data))
    elif api_key == ENVELOPE and direction == "response":
        inner = request_body.get("request_data_decoded")
        if inner:
            _one(
                body,
                "response_data",
                lambda data: decoder.decode_response(data, inner["api_key"], inner["api_version"]),
            )


def _each(decoder, items, field: str, name: str) -> None:
    for item in items:
        _one(item, field, lambda data: decode_versioned(decoder, name, data))


def _one(holder: dict, field: str, decode) -> None:
    data = holder.get(field)
    if not data:  # null or empty: nothing embedded (an empty assignment is normal)
        return
    try:
        holder[f"{field}_decoded"] = decode(data)
    except DecodeError as e:
        holder[f"{field}_error"] = str(e)
