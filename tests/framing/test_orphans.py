"""Responses whose request was not captured (``framing.orphans``): read at their connection's api
versions only when nothing else could have sent them, and found by filtered reads too."""

import struct

from .kafkaflow import Conversation, metadata_v1_request, metadata_v1_response, produce_v3_response, string
from .test_read_capture import run


def _leave_group_v1(correlation_id: int) -> bytes:
    return struct.pack(">hhi", 13, 1, correlation_id) + string("rdkafka") + string("group") + string("member-1")


def test_a_response_one_request_of_its_connection_reads_stays_raw_when_another_api_reads_it_too(tmp_path):
    """Found on librdkafka traffic: the capture started while a Heartbeat v3 was in flight, and
    the only request captured after it was a LeaveGroup v1. Both answers are a throttle time and
    an error code, so the Heartbeat's answer reads exactly as a LeaveGroup one: it is not labelled
    one, as the request not captured may have been of another api (it was)."""
    c = Conversation()
    c.response(struct.pack(">iih", 4, 0, 0))  # Heartbeat v3's answer to correlation id 4
    c.request(_leave_group_v1(5))
    c.response(struct.pack(">iih", 5, 0, 0))
    rows = run(tmp_path, c.pcap())
    [left] = [e for e in rows if e.correlation_id == 5]
    [missing] = [e for e in rows if e.correlation_id == 4]
    assert (left.status, left.api_name) == ("ok", "LeaveGroup")
    assert (missing.status, missing.api_key, missing.response) == ("request_missing", None, None)
    assert "reads exactly as LeaveGroup v1, of this connection's requests, and as" in missing.note
    assert "Heartbeat v1-3" in missing.note


def _fetch_v7_request(correlation_id: int, version: int = 7) -> bytes:
    body = struct.pack(">iiiibii", -1, 500, 1, 1 << 20, 0, 0, -1)
    body += struct.pack(">i", 1) + string("t") + struct.pack(">i", 1) + struct.pack(">iqqi", 0, 0, -1, 1 << 20)
    return struct.pack(">hhi", 1, version, correlation_id) + string("app") + body + struct.pack(">i", 0)


def _fetch_v7_response(correlation_id: int, records: bytes = b"") -> bytes:
    part = struct.pack(">ihqqq", 0, 0, 100, 100, 0) + struct.pack(">i", -1) + struct.pack(">i", len(records)) + records
    topic = string("t") + struct.pack(">i", 1) + part
    return struct.pack(">i", correlation_id) + struct.pack(">ihi", 0, 0, 0) + struct.pack(">i", 1) + topic


def _one_batch() -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for i in range(3):
        builder.append(i, 1_700_000_000_000, None, b"value %d" % i, [])
    return bytes(builder.build())


def test_an_orphan_fetch_is_in_a_fetch_only_read_when_a_later_request_reuses_its_id(tmp_path):
    """A read for some apis (the records view's) skips the others' requests, and a skipped
    request whose correlation id a held response has took that response as its answer. The
    response came before that request, so it answers an earlier one: it is read as any orphan."""
    c = Conversation()
    c.request(_fetch_v7_request(1))
    c.response(_fetch_v7_response(1))
    c.response(_fetch_v7_response(7, _one_batch()))  # its request was not captured
    c.request(metadata_v1_request(7))  # correlation id 7 again
    c.response(metadata_v1_response(7))
    for apis in (None, [1], [1, 3]):
        rows = run(tmp_path, c.pcap(), apis=apis)
        [orphan] = [e for e in rows if e.status == "request_missing"]
        assert (orphan.correlation_id, orphan.api_name, orphan.api_version) == (7, "Fetch", 7), apis
        assert len(orphan.response["responses"][0]["partitions"][0]["records"][0]["records"]) == 3


def test_an_orphan_that_several_versions_of_its_connection_read_is_not_decoded_at_each(tmp_path):
    """Fetch v7 to v10 answers have one layout: a connection that used all four cannot tell
    which one an orphan answers, and its records are not decompressed four times to find out."""
    c = Conversation()
    for n, version in enumerate((7, 8, 9, 10), start=1):
        c.request(_fetch_v7_request(n, version))
        c.response(_fetch_v7_response(n))
    c.response(_fetch_v7_response(99, _one_batch()))
    [orphan] = [e for e in run(tmp_path, c.pcap()) if e.status == "request_missing"]
    assert orphan.api_key is None and orphan.raw_response
    assert "reads exactly as any of Fetch v7, Fetch v8, Fetch v9, Fetch v10" in orphan.note


def test_a_response_no_request_of_its_connection_reads_stays_raw_and_says_so(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(2))
    c.response(produce_v3_response(99))
    c.response(metadata_v1_response(2))
    rows = run(tmp_path, c.pcap())
    [answered] = [e for e in rows if e.correlation_id == 2]
    [missing] = [e for e in rows if e.correlation_id == 99]
    assert (missing.status, missing.api_key, missing.response) == ("request_missing", None, None)
    assert missing.raw_response == produce_v3_response(99)
    assert "none of this connection's requests (Metadata v1) reads it" in missing.note
    assert answered.status == "ok"


def test_with_no_request_captured_a_response_one_api_reads_is_read_at_its_layout(tmp_path):
    """Only the broker's side: the Fetch answer reads exactly as Fetch v7-10 (one layout) and as
    no other api, so it is a Fetch of an unknown version, read at v10, its records included; the
    same answer again reads alike. A Heartbeat's answer reads as a dozen apis: it stays raw."""
    c = Conversation()
    c.response(_fetch_v7_response(7, _one_batch()))
    c.response(_fetch_v7_response(8, _one_batch()))
    c.response(struct.pack(">iih", 9, 0, 0))
    first, second, heartbeat = run(tmp_path, c.pcap())
    for fetch in (first, second):
        assert (fetch.status, fetch.api_name, fetch.api_version) == ("request_missing", "Fetch", None)
        [batch] = fetch.response["responses"][0]["partitions"][0]["records"]
        assert [r["value"] for r in batch["records"]] == [b"value 0", b"value 1", b"value 2"]
        assert "nor any of this connection's" in fetch.note and "alike as Fetch v7-10" in fetch.note
    assert (second.correlation_id, second.response) == (8, first.response)
    assert (heartbeat.api_key, heartbeat.response, heartbeat.raw_response) == (None, None, struct.pack(">iih", 9, 0, 0))
    assert "reads exactly as" in heartbeat.note and "Heartbeat" in heartbeat.note
