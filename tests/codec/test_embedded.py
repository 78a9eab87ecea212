"""Embedded structures: consumer protocol in JoinGroup/SyncGroup, Envelope, KRaft control data.

The embedded bytes are built by independent codecs: kafka-python's consumer protocol structs
and kio's data-message writers.
"""

import io
import struct

from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberAssignment_v0, ConsumerProtocolMemberMetadata_v0
from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter
from kio.serial import entity_writer

from kafka_protocol_source import decode_request, decode_response, decoder_for
from kafka_protocol_source.codec.embedded import decode_control_data


def kio_bytes(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def sized(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def join_group_v1(protocol_type: str, metadata: bytes) -> bytes:
    header = struct.pack(">hhi", 11, 1, 4) + string("c")
    body = string("group") + struct.pack(">ii", 6000, 6000) + string("") + string(protocol_type)
    return header + body + struct.pack(">i", 1) + string("range") + sized(metadata)


SUBSCRIPTION = ConsumerProtocolMemberMetadata_v0(version=0, topics=["orders", "payments"], user_data=b"ud").encode()
ASSIGNMENT = ConsumerProtocolMemberAssignment_v0(
    version=0, assigned_partitions=[("orders", [0, 2])], user_data=b""
).encode()


def test_join_group_consumer_metadata_is_decoded_beside_the_raw_bytes():
    protocol = decode_request(join_group_v1("consumer", SUBSCRIPTION))["body"]["protocols"][0]
    assert protocol["metadata"] == SUBSCRIPTION
    assert protocol["metadata_decoded"] == {"version": 0, "topics": ["orders", "payments"], "user_data": b"ud"}


def test_other_protocol_types_are_left_alone():
    protocol = decode_request(join_group_v1("connect", SUBSCRIPTION))["body"]["protocols"][0]
    assert "metadata_decoded" not in protocol and "metadata_error" not in protocol


def test_undecodable_consumer_metadata_becomes_an_error_field_not_an_exception():
    protocol = decode_request(join_group_v1("consumer", b"\x00\x00\x7f"))["body"]["protocols"][0]
    assert "metadata_decoded" not in protocol
    assert "ConsumerProtocolSubscription" in protocol["metadata_error"]


def test_sync_group_response_uses_the_request_for_the_protocol_type():
    request = {"body": {"protocol_type": "consumer"}}
    frame = struct.pack(">i", 9) + struct.pack(">h", 0) + sized(ASSIGNMENT)  # SyncGroup v0 response
    decoded = decode_response(frame, 14, 0, request=request)
    assert decoded["body"]["assignment_decoded"] == {
        "version": 0,
        "assigned_partitions": [{"topic": "orders", "partitions": [0, 2]}],
        "user_data": b"",
    }
    assert "assignment_decoded" not in decode_response(frame, 14, 0)["body"]


def test_envelope_carries_a_whole_request_and_a_principal():
    inner = struct.pack(">hhi", 3, 1, 77) + string("inner") + struct.pack(">i", -1)  # Metadata v1, all topics
    principal = struct.pack(">h", 0) + kio_bytes(
        DefaultPrincipalData(type_="User", name="alice", token_authenticated=False)
    )

    # Envelope v0 is flexible: header v2, compact bytes, compact nullable bytes, tags.
    def compact(b):
        return bytes([len(b) + 1]) + b

    frame = (
        struct.pack(">hhi", 58, 0, 5)
        + string("broker")
        + b"\x00"
        + compact(inner)
        + compact(principal)
        + compact(b"\x7f\x00\x00\x01")
        + b"\x00"
    )
    body = decode_request(frame)["body"]
    assert body["request_data_decoded"]["api_name"] == "Metadata"
    assert body["request_data_decoded"]["body"] == {"topics": None}
    assert body["request_principal_decoded"] == {
        "version": 0,
        "type": "User",
        "name": "alice",
        "token_authenticated": False,
    }


def test_kraft_leader_change_control_data():
    message = LeaderChangeMessage(
        version=0, leader_id=1, voters=(Voter(voter_id=1), Voter(voter_id=2)), granting_voters=(Voter(voter_id=2),)
    )
    value = kio_bytes(message)  # the Version field leads; no separate version prefix
    decoded = decode_control_data(decoder_for(), 2, value)
    assert decoded == {
        "version": 0,
        "leader_id": 1,
        "voters": [{"voter_id": 1}, {"voter_id": 2}],
        "granting_voters": [{"voter_id": 2}],
    }
