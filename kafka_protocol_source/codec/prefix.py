"""The fields of a frame the capture cut short, up to the cut.

A small snaplen (``tcpdump -s 128``) cuts every frame longer than a packet's first bytes, and a
lost packet cuts the frame it belonged to. The bytes before the cut are the frame's own: its
header, and the body's fields in wire order up to where the bytes end. Read with the
interpreted parsers, which hand over what they had read when the bytes ran out
(``WireError.partial``), they give a body that holds every field before the cut: a Produce's
topics and partitions, a response's error codes. A field the cut went through is left out (an
array keeps the elements before it, and what was read of the one it cut); the record batches
read whole are decoded, embedded bytes (a group member's metadata) are not.

Owns only that reading. A frame whose bytes do not read as its spec says before the cut gives
nothing (it stays raw). Does not own whole frames (``decoder``).
"""

from __future__ import annotations

import struct
from io import BytesIO

from ..spec.headers import request_header_version, response_header_version
from .errors import Truncated
from .runtime import PREFIX

_API_KEY_VERSION = struct.Struct(">hh")


def request_prefix(decoder, payload: bytes, max_decompressed_bytes: int) -> dict | None:
    """A request frame cut short (``payload``: the bytes present, after the size) as the decoder
    gives a whole one (api, version, correlation id, client id, body), with ``cut_at``: the
    field the cut went through. None where its header is not all there or it does not read."""
    if len(payload) < 4:
        return None
    api_key, version = _API_KEY_VERSION.unpack_from(payload)
    message = decoder.registry.request(api_key)

    def result(header: dict) -> dict:
        return {
            "api_key": api_key,
            "api_name": message.api_name,
            "api_version": version,
            "correlation_id": header["correlation_id"],
            "client_id": header.get("client_id"),
        }

    header_of = ("RequestHeader", request_header_version)
    return _frame(decoder, payload, message, version, header_of, result, max_decompressed_bytes)


def response_prefix(
    decoder, payload: bytes, api_key: int, api_version: int, max_decompressed_bytes: int
) -> dict | None:
    """``request_prefix`` of a response of ``api_key`` at ``api_version`` (its request's)."""

    def result(header: dict) -> dict:
        return {"api_key": api_key, "api_version": api_version, "correlation_id": header["correlation_id"]}

    message = decoder.registry.response(api_key)
    header_of = ("ResponseHeader", response_header_version)
    return _frame(decoder, payload, message, api_version, header_of, result, max_decompressed_bytes)


def _frame(decoder, payload: bytes, message, version: int, header_of, result, budget: int) -> dict | None:
    """The header (``header_of``: its name, and its version for the message's) then the body."""
    if message is None or version not in message.valid_versions:
        return None
    io = BytesIO(payload)
    name, header_version = header_of
    header = _whole(decoder, io, name, header_version(message, version))
    if header is None:
        return None
    return _with_body(decoder, io, message.name, version, result(header), budget)


def _whole(decoder, io: BytesIO, name: str, version: int) -> dict | None:
    try:
        return decoder.parsers.get(name, version).interpreted._parse(io, None, "")
    except Exception:  # noqa: BLE001 - whatever stops a read of a cut frame, it stays raw
        return None


def _with_body(decoder, io: BytesIO, name: str, version: int, result: dict, budget: int) -> dict | None:
    PREFIX.reading = True  # (a long array is read while bytes last, not refused by its count)
    try:
        body = decoder.parsers.get(name, version).interpreted._parse(io, None, "")
        cut_at = None  # (it reads whole: the cut was in bytes the spec does not have)
    except Truncated as e:
        body = e.partial if isinstance(e.partial, dict) else {}
        cut_at = e.dotted_path or ("the tag section at the body's end" if body else "the body's start")
    except Exception:  # noqa: BLE001 - whatever stops a read of a cut frame, it stays raw
        return None
    finally:
        PREFIX.reading = False
    result = {**result, "body": body, "cut_at": cut_at}
    try:
        decoder.records_of(result, name, version, budget)  # (the batches read whole: a cut one is no field)
    except Exception:  # noqa: BLE001
        return None
    return result
