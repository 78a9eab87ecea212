"""Cheap looks at raw bytes: does a Kafka request, a response, or TLS start here?

These decide where frames start after a gap or a late capture start, which side of a
connection is the client, and whether traffic on an unconfigured port is Kafka at all. They
read a header at most; full decoding is the pairing stage's job.
"""

from __future__ import annotations

import re
import struct

from ..codec.errors import DecodeError
from ..spec.headers import request_header_version

_SIZE = struct.Struct(">i")
_REQUEST_START = struct.Struct(">ihhi")  # size, api key, version, correlation id
_CLIENT_ID_LENGTH = struct.Struct(">h")
_MIN_REQUEST = 8  # api key, version, correlation id
WHOLE_FRAME_LIMIT = 1 << 20
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")


def request_start_check(decoder, max_frame_size: int):
    """A start check for client->broker bytes: a size, a request header, and a body that decodes.

    While resyncing a whole candidate frame must decode, so that bytes inside a frame that
    happen to look like a header are not taken for one; only a frame too large to wait for
    (over ``WHOLE_FRAME_LIMIT``) is accepted on its header alone.
    """
    registry = decoder.registry
    versions = {key: registry.request(key).valid_versions for key in registry.api_keys()}
    messages = {key: registry.request(key) for key in registry.api_keys()}

    def check(buf, pos: int):
        verdict = header_check(buf, pos)
        if not verdict:
            return verdict
        size = _SIZE.unpack_from(buf, pos)[0]
        whole = len(buf) - pos >= 4 + size
        if not whole and size <= WHOLE_FRAME_LIMIT:
            return None
        try:
            decoder.decode_request(bytes(buf[pos + 4:pos + 4 + size]))
        except DecodeError as e:
            # Too big to wait for: plausible if what is here reads as a beginning of it.
            return not whole and e.truncated
        return True

    def header_check(buf, pos: int):
        left = len(buf) - pos
        if left < 12:
            return None
        size, api_key, version, correlation_id = _REQUEST_START.unpack_from(buf, pos)
        if size < _MIN_REQUEST or size > max_frame_size or correlation_id < 0:
            return False
        valid = versions.get(api_key)
        if valid is None or version not in valid:
            return False
        if request_header_version(messages[api_key], version) == 0:
            return True
        if left < 14:
            return None
        (client_len,) = _CLIENT_ID_LENGTH.unpack_from(buf, pos + 12)
        if client_len < -1 or 8 + 2 + max(client_len, 0) > size:
            return False
        if left < 14 + max(client_len, 0):
            return None
        client_id = bytes(buf[pos + 14:pos + 14 + max(client_len, 0)])
        return not _CONTROL.search(client_id)  # client ids are text

    return check


def response_start_check(max_frame_size: int, pending_ids):
    """A start check for broker->client bytes: a size, then a correlation id we are waiting for.

    ``pending_ids()`` returns the correlation ids of the requests still unanswered. With none
    known (the requests were not captured), a plausible size followed by another plausible
    size where the next frame would start is accepted instead.
    """

    def check(buf, pos: int):
        left = len(buf) - pos
        if left < 8:
            return None
        size, correlation_id = struct.unpack_from(">ii", buf, pos)
        if size < 4 or size > max_frame_size:
            return False
        ids = pending_ids()
        if ids:
            return correlation_id in ids
        nxt = pos + 4 + size
        if len(buf) - nxt < 4:
            return None if left < 4 + size + 4 else True
        (next_size,) = _SIZE.unpack_from(buf, nxt)
        return 4 <= next_size <= max_frame_size

    return check


def looks_like_tls(data: bytes) -> bool:
    """A TLS record header: handshake (22) or alert (21), version 3.x, plausible length."""
    if len(data) < 5 or data[0] not in (0x15, 0x16) or data[1] != 3 or data[2] > 4:
        return False
    return 0 < int.from_bytes(data[3:5], "big") <= 18432
