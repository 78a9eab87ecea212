"""Hand-built connections cut the way real captures cut them: joined without the SYN (mid-frame,
inside a response spanning packets), a segment lost, a connection that closes unanswered.

Each connection is laid out byte for byte (``kafkaflow``), so what the capture holds is known
exactly; the sample captures cut by ``tests.cuts`` are ``test_real_cuts``'s.
"""

from __future__ import annotations

import struct

from kafka_protocol_source import read_capture
from tests.accounting import check_accounting
from tests.cuts import segments_of
from tests.samples.catalog import samples

from .kafkaflow import Conversation, metadata_v1_request, metadata_v1_response, sized
from .test_read_capture import run
from .test_real_cuts import _records_in


def test_a_request_without_response_then_fin_is_unanswered_with_and_without_ports(tmp_path):
    # The splitter crashed here (TypeError in _compact): the broker side never carried a byte.
    c = Conversation()
    c.request(metadata_v1_request(7))
    c._segment(c.client, c.broker, 0x11, b"")  # FIN|ACK
    c._segment(c.broker, c.client, 0x11, b"")
    for ports in ([9092], None):
        rows = run(tmp_path, c.pcap(), ports=ports)
        assert [(e.status, e.api_name, e.correlation_id) for e in rows] == [("unanswered", "Metadata", 7)]
        assert "closed (FIN)" in rows[0].error


def test_joined_without_syn_mid_frame_the_rest_pairs_and_the_cut_bytes_are_a_gap(tmp_path):
    c = Conversation(handshake=False)
    c.request(metadata_v1_request(1, topics=("t" * 40,)), pieces=2)
    c.response(metadata_v1_response(1))
    for i in range(2, 5):
        c.request(metadata_v1_request(i))
        c.response(metadata_v1_response(i))
    data = c.pcap(drop=(0,))  # the capture starts with the request's second segment
    for ports in ([9092], None):
        rows = run(tmp_path, data, ports=ports)
        assert [(e.status, e.correlation_id) for e in rows if e.status == "ok"] == [("ok", 2), ("ok", 3), ("ok", 4)]
        gaps = [e for e in rows if e.status == "gap"]
        assert gaps and "mid-stream" in gaps[0].error
        missing = [e for e in rows if e.status == "request_missing"]
        assert [e.correlation_id for e in missing] == [1]


def _api_versions_v0(correlation_id: int, client_id: str = "rdkafka", pad: bytes = b"\x00" * 4) -> bytes:
    return struct.pack(">hhi", 18, 0, correlation_id) + struct.pack(">h", len(client_id)) + client_id.encode() + pad


def _api_versions_v0_response(correlation_id: int) -> bytes:
    keys = [(0, 0, 9), (1, 0, 12), (3, 0, 12), (18, 0, 3)]
    return struct.pack(">ihi", correlation_id, 0, len(keys)) + b"".join(struct.pack(">hhh", *k) for k in keys)


def test_librdkafka_padded_api_versions_v0_on_a_connection_joined_without_syn(tmp_path):
    c = Conversation(handshake=False)
    c.request(metadata_v1_request(40, client_id="rdkafka"))
    c.response(metadata_v1_response(40))
    c.request(_api_versions_v0(41))
    c.response(_api_versions_v0_response(41))
    c.request(metadata_v1_request(42, client_id="rdkafka"))
    c.response(metadata_v1_response(42))
    rows = run(tmp_path, c.pcap(), ports=[9092])
    assert [e.correlation_id for e in rows] == [40, 41, 42]
    assert not [e for e in rows if e.status in ("gap", "request_missing")]
    padded = rows[1]
    assert padded.api_name == "ApiVersions" and padded.request == {} and padded.response["api_keys"]
    assert "4 bytes left after the request body" in padded.error  # said, not hidden; the body is kept


def test_bytes_that_only_look_like_a_huge_request_do_not_stall_the_direction(tmp_path):
    # After a gap, the first position that parses is a Produce v0 header claiming 1.3 MB with a
    # long "client id"; the real frames after it must still pair.
    c = Conversation()
    c.request(metadata_v1_request(1))
    c.response(metadata_v1_response(1))
    junk = struct.pack(">ihhih", 1_300_000, 0, 0, 5, 300) + b"x" * 300 + b"\x01\x02"
    c.send(c.client, junk)
    for i in (2, 3):
        c.request(metadata_v1_request(i))
        c.response(metadata_v1_response(i))
    rows = run(tmp_path, c.pcap(drop=(2,)), ports=[9092])  # the first request's segment is lost
    assert [(e.status, e.correlation_id) for e in rows if e.status == "ok"] == [("ok", 2), ("ok", 3)]
    assert check_accounting(tmp_path / "c.pcap", ports=[9092]) == []


def _direction_bytes(segments, src_port: int, dst_port: int) -> bytes:
    ordered = sorted((s for s in segments if (s.src_port, s.dst_port) == (src_port, dst_port)), key=lambda s: s.seq)
    return b"".join(s.payload for s in ordered)


def _a_fetch_with_records() -> tuple[bytes, bytes]:
    """The confluent sample's first Fetch request and its response (which holds records), each
    without its size prefix."""
    s = next(s for s in samples() if s.name == "tansu_confluent_kafka_all_codecs")
    fetch = next(
        e for e in read_capture(s.path, ports=[s.broker_port]) if e.api_name == "Fetch" and _records_in(e.response)
    )
    segments = segments_of(s.path)
    client, broker = (int(a.rsplit(":", 1)[1]) for a in (fetch.client_address, fetch.broker_address))
    start, size = fetch.request_span
    request = _direction_bytes(segments, client, broker)[start + 4 : start + size]
    start, size = fetch.response_span
    response = _direction_bytes(segments, broker, client)[start + 4 : start + size]
    return request, response


def test_joined_without_syn_a_response_in_many_packets_pairs_with_its_request_whatever_their_size(tmp_path):
    """The response's first packet starts with an id its captured request waits for: that is its
    start, though bytes inside the span its records claim happen to chain to a packet boundary."""
    request, response = _a_fetch_with_records()
    (correlation_id,) = struct.unpack_from(">i", response)
    wrong = []
    for mss in range(100, 1501, 15):
        c = Conversation(handshake=False)
        c.request(request)
        c.response(response, pieces=-(-(len(response) + 4) // mss))
        rows = run(tmp_path, c.pcap(), ports=[9092])
        if [(e.status, e.correlation_id) for e in rows] != [("ok", correlation_id)]:
            wrong.append((mss, [(e.status, e.correlation_id) for e in rows]))
    assert wrong == []


def test_a_request_whose_response_a_gap_took_says_so(tmp_path):
    """Brokers answer in order: a request left unanswered when a later one was answered after a
    gap of the broker side had its response in the gap, and its row points there."""
    c = Conversation()
    for i in range(1, 4):
        c.request(metadata_v1_request(i))
        c.response(metadata_v1_response(i))
    lost = next(i for i, s in enumerate(c.segments) if s[1] == c.broker and s[6] and b"\x00\x00\x00\x02" in s[6][:8])
    rows = run(tmp_path, c.pcap(drop=(lost,)), ports=[9092])
    [unanswered] = [e for e in rows if e.status == "unanswered"]
    assert unanswered.correlation_id == 2
    assert "may be in a gap of the broker side after it" in unanswered.error
    assert "bytes missing from the capture at stream offset" in unanswered.error
    assert [e.correlation_id for e in rows if e.status == "ok"] == [1, 3]


def test_joined_inside_a_response_bytes_that_repeat_an_awaited_id_at_a_packet_start_do_not_win(tmp_path):
    """The capture joins inside the answer to a request sent before it, while a captured request
    waits; a packet of that answer starts with record bytes that read as a plausible size and the
    waiting id. The real answer, later, whose frames chain, is the one read."""
    request, response = _a_fetch_with_records()
    (correlation_id,) = struct.unpack_from(">i", response)
    earlier = bytearray(sized(struct.pack(">i", correlation_id - 1) + response[4:]))
    mss = 600
    assert len(earlier) > 3 * mss
    earlier[2 * mss : 2 * mss + 8] = struct.pack(">ii", 0x4000, correlation_id)
    c = Conversation(handshake=False)
    c.request(request)
    for i in range(mss, len(earlier), mss):  # from its second packet on
        c.send(c.broker, bytes(earlier[i : i + mss]))
    c.response(response, pieces=4)
    rows = run(tmp_path, c.pcap(), ports=[9092])
    assert [(e.status, e.correlation_id) for e in rows if e.status != "gap"] == [("ok", correlation_id)]
