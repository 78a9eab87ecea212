"""Frame-level decoding: headers and their exceptions, the ApiVersions fallback, errors."""

import struct

import pytest

from kafka_protocol_source import DecodeError, decode_request, decode_response

from .wiregen import uvarint


def header_v1(api_key, version, correlation_id, client_id="cli"):
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id.encode()


def test_request_header_v2_keeps_a_non_compact_client_id():
    # ApiVersions v3: header v2 (client id int16-prefixed, then an empty tag section),
    # body: compact strings software name/version, empty tag section.
    frame = header_v1(18, 3, 42, "my-client") + b"\x00" + b"\x06kafka" + b"\x041.0" + b"\x00"
    decoded = decode_request(frame)
    assert decoded == {
        "api_key": 18,
        "api_name": "ApiVersions",
        "api_version": 3,
        "correlation_id": 42,
        "client_id": "my-client",
        "body": {"client_software_name": "kafka", "client_software_version": "1.0"},
    }


def test_null_client_id():
    frame = struct.pack(">hhih", 18, 0, 1, -1)
    assert decode_request(frame)["client_id"] is None


def test_controlled_shutdown_v0_uses_header_v0_without_client_id():
    frame = struct.pack(">hhi", 7, 0, 5) + struct.pack(">i", 3)  # broker_id 3
    decoded = decode_request(frame)
    assert decoded["client_id"] is None and decoded["body"] == {"broker_id": 3}


def api_versions_v0_body(error_code=35, keys=((18, 0, 3),)):
    return struct.pack(">hi", error_code, len(keys)) + b"".join(struct.pack(">hhh", *k) for k in keys)


def test_api_versions_response_always_has_header_v0():
    # v3 body is flexible, yet the header is v0 (no tag section after the correlation id).
    body = struct.pack(">h", 0) + uvarint(2) + struct.pack(">hhh", 0, 0, 9) + b"\x00" + struct.pack(">i", 0) + b"\x00"
    decoded = decode_response(struct.pack(">i", 77) + body, 18, 3)
    assert decoded["correlation_id"] == 77
    assert decoded["body"]["api_keys"] == [{"api_key": 0, "min_version": 0, "max_version": 9}]
    assert "body_version" not in decoded


def test_api_versions_unsupported_version_falls_back_to_v0_and_says_so():
    frame = struct.pack(">i", 8) + api_versions_v0_body()
    decoded = decode_response(frame, 18, 4)
    assert decoded["body_version"] == 0
    assert "decoded as v0" in decoded["note"]
    assert decoded["body"] == {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]}


def test_api_versions_of_a_version_newer_than_our_specs_also_falls_back():
    decoded = decode_response(struct.pack(">i", 8) + api_versions_v0_body(), 18, 9)
    assert decoded["body_version"] == 0


def test_no_fallback_for_other_apis():
    with pytest.raises(DecodeError):
        decode_response(struct.pack(">i", 8) + api_versions_v0_body(), 3, 9)


@pytest.mark.parametrize(
    "frame,match",
    [
        (b"\x00", "too short"),
        (struct.pack(">hhih", 9999, 0, 1, -1), "unknown api key 9999"),
        (struct.pack(">hhih", 0, 99, 1, -1), "version 99 is not one of Produce's"),
    ],
)
def test_bad_frames_raise_decode_error(frame, match):
    with pytest.raises(DecodeError, match=match):
        decode_request(frame)


def test_error_says_api_version_offset_and_path():
    # Metadata v1: topics array of 2, second topic name claims 300 bytes.
    frame = header_v1(3, 1, 1) + struct.pack(">ih", 2, 1) + b"a" + struct.pack(">h", 300) + b"bc"
    with pytest.raises(DecodeError) as e:
        decode_request(frame)
    err = e.value
    assert (err.api_key, err.api_name, err.api_version, err.direction) == (3, "Metadata", 1, "request")
    assert err.path == "topics[1].name" and err.offset == 13 + 4 + 3
    assert "claimed length 300" in str(err) and "at byte 20" in str(err) and "topics[1].name" in str(err)


def test_trailing_bytes_are_an_error():
    frame = header_v1(3, 1, 1) + struct.pack(">i", -1) + b"junk"
    with pytest.raises(DecodeError, match="4 bytes left after the MetadataRequest body"):
        decode_request(frame)


def test_nullable_struct_field_in_a_response():
    # ConsumerGroupHeartbeat response v0 (flexible): Assignment is a nullable struct (KIP-893).
    head = struct.pack(">i", 3) + b"\x00"  # header v1: correlation id + tags
    common = (
        struct.pack(">ih", 0, 0) + b"\x00" + b"\x00" + struct.pack(">ii", 1, 5000)
    )  # throttle, error, msg null, member id null, epoch, interval
    null_assignment = decode_response(head + common + b"\xff" + b"\x00", 68, 0)
    assert null_assignment["body"]["assignment"] is None
    assignment = b"\x01" + uvarint(1) + b"\x00"  # marker, empty topic partitions, its tags
    present = decode_response(head + common + assignment + b"\x00", 68, 0)
    assert present["body"]["assignment"] == {"topic_partitions": []}
