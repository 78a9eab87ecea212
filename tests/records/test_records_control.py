"""Control batches: transaction markers and KRaft control records."""

import struct

import pytest
from kafka.record.memory_records import MemoryRecords

from kafka_protocol_source.records import decode_records
from tests.records.records_builders import raw_record, raw_v2_batch

CONTROL = 0x20
TRANSACTIONAL = 0x10


def marker_batch(type_id, coordinator_epoch=7, base_offset=40, producer_id=1001):
    key = struct.pack(">hh", 0, type_id)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return raw_v2_batch(
        raw_record(key, value),
        1,
        base_offset=base_offset,
        attributes=CONTROL | TRANSACTIONAL,
        base_timestamp=123,
        max_timestamp=123,
        producer_id=producer_id,
        producer_epoch=2,
    )


@pytest.mark.parametrize(("type_id", "name"), [(0, "ABORT"), (1, "COMMIT")])
def test_transaction_markers(type_id, name):
    buf = marker_batch(type_id)

    [batch] = decode_records(buf)

    assert batch["error"] is None
    assert batch["crc_valid"] is True
    assert batch["is_control"] is True
    assert batch["is_transactional"] is True
    assert batch["producer_id"] == 1001
    [record] = batch["records"]
    assert record["offset"] == 40
    assert record["control"] == {
        "type": type_id,
        "type_name": name,
        "version": 0,
        "data": {"version": 0, "coordinator_epoch": 7},
        "error": None,
    }
    # kafka-python's reader agrees on the marker type.
    [oracle] = list(next(iter(MemoryRecords(buf))))
    assert oracle.type == type_id
    assert oracle.abort == (type_id == 0)


def test_markers_follow_data_batches():
    data = raw_v2_batch(raw_record(b"k", b"v"), 1, attributes=TRANSACTIONAL, producer_id=1001, producer_epoch=2)
    buf = data + marker_batch(1, base_offset=1)
    batches = decode_records(buf)
    assert [b["is_control"] for b in batches] == [False, True]
    assert batches[0]["records"][0]["control"] is None
    assert batches[1]["records"][0]["control"]["type_name"] == "COMMIT"


def kraft_batch(type_id, value=b"\x00\x00\x01\x02"):
    key = struct.pack(">hh", 0, type_id)
    return raw_v2_batch(raw_record(key, value), 1, attributes=CONTROL)


@pytest.mark.parametrize(
    ("type_id", "name"),
    [(2, "LEADER_CHANGE"), (3, "SNAPSHOT_HEADER"), (4, "SNAPSHOT_FOOTER"), (5, "KRAFT_VERSION"), (6, "KRAFT_VOTERS")],
)
def test_kraft_control_records_go_to_the_callback(type_id, name):
    calls = []

    def decode_control(tid, value):
        calls.append((tid, value))
        return {"decoded": tid}

    [plain] = decode_records(kraft_batch(type_id))
    [decoded] = decode_records(kraft_batch(type_id), decode_control=decode_control)

    assert plain["records"][0]["control"] == {
        "type": type_id,
        "type_name": name,
        "version": 0,
        "data": None,
        "error": None,
    }
    assert decoded["records"][0]["control"]["data"] == {"decoded": type_id}
    assert calls == [(type_id, b"\x00\x00\x01\x02")]


def test_callback_failure_becomes_a_control_error():
    def decode_control(tid, value):
        raise ValueError("bad leader change")

    [batch] = decode_records(kraft_batch(2), decode_control=decode_control)

    control = batch["records"][0]["control"]
    assert control["data"] is None
    assert "ValueError: bad leader change" in control["error"]
    assert batch["error"] is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (b"\x00", b"", "key shorter"),
        (None, b"", "key shorter"),
        (struct.pack(">hh", 0, 1), b"\x00\x00", "marker value shorter"),
        (struct.pack(">hh", 0, 1), None, "marker value shorter"),
        (struct.pack(">hh", 0, 99), b"", "unknown control record type 99"),
    ],
)
def test_malformed_control_records(key, value, message):
    [batch] = decode_records(raw_v2_batch(raw_record(key, value), 1, attributes=CONTROL))
    control = batch["records"][0]["control"]
    assert message in control["error"]
    assert batch["records"][0]["key"] == key


def test_control_data_is_read_with_the_definitions_of_the_message_around_it(tmp_path):
    """A records field decoded by a decoder built from an edited krammar file reads its KRaft
    control data with that file's LeaderChangeMessage, not the bundled one."""
    import io

    from kio.schema.leader_change_message.v0.data import LeaderChangeMessage
    from kio.serial import entity_writer

    from kafka_protocol_source.codec.decoder import Decoder, decoder_for

    def kio_bytes(entity) -> bytes:
        buffer = io.BytesIO()
        entity_writer(type(entity))(buffer, entity)
        return buffer.getvalue()

    from kafka_protocol_source.spec.registry import DEFAULT_SPECS, SpecRegistry

    krammar = (DEFAULT_SPECS / "kafka.krammar").read_text()
    leader_change = krammar.index("LeaderChangeMessage => not top level")
    edited = krammar[:leader_change] + krammar[leader_change:].replace("  LeaderId: int32", "  Leader: int32", 1)
    edited += "\nHolder => not top level, data, max version 0\n  Records: records\n"
    path = tmp_path / "edited.krammar"
    path.write_text(edited)
    value = kio_bytes(LeaderChangeMessage(version=0, leader_id=3, voters=(), granting_voters=()))
    batch = kraft_batch(2, value)
    holder = struct.pack(">i", len(batch)) + batch

    mine = Decoder(SpecRegistry.from_path(path)).parse_message("Holder", 0, holder)
    assert mine["records"][0]["records"][0]["control"]["data"] == {
        "version": 0,
        "leader": 3,
        "voters": [],
        "granting_voters": [],
    }
    [bundled] = decode_records(
        batch, decode_control=lambda t, v: decoder_for().parse_message("LeaderChangeMessage", 0, v)
    )
    assert bundled["records"][0]["control"]["data"]["leader_id"] == 3
