"""read_capture on crafted captures: pairing, acks=0, gaps and resync, detection, SASL, TLS, dumps."""

import struct
import zlib

import pytest

from kafka_protocol_source import CaptureOptions, read_capture
from kafka_protocol_source.pipeline import read_with
from tests.capture import pcapbuild as pb

from .kafkaflow import (
    BROKER,
    CLIENT,
    Conversation,
    metadata_v1_request,
    metadata_v1_response,
    produce_v3_request,
    produce_v3_response,
    sized,
    string,
)


def run(tmp_path, data: bytes, name="c.pcap", **options):
    path = tmp_path / name
    path.write_bytes(data)
    return list(read_capture(path, **options))


def summary(exchanges):
    return [(e.status, e.api_name, e.correlation_id) for e in exchanges]


def test_pipelined_responses_out_of_order_pair_by_correlation_id(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1, ("a",)))
    c.request(metadata_v1_request(2, ("b", "c")), pieces=3)
    c.response(metadata_v1_response(2, ("b", "c")), pieces=2)
    c.response(metadata_v1_response(1, ("a",)))
    out = run(tmp_path, c.pcap())
    assert sorted(summary(out), key=lambda s: s[2]) == [("ok", "Metadata", 1), ("ok", "Metadata", 2)]
    by_id = {e.correlation_id: e for e in out}
    assert [t["name"] for t in by_id[2].response["topics"]] == ["b", "c"]
    assert by_id[1].client_address == "10.0.0.1:50000" and by_id[1].broker_address == "10.0.0.2:9092"
    assert by_id[1].client_id == "app" and by_id[1].api_version == 1
    # request 1 starts at segment 2 (after SYN, SYN-ACK); its response ends at segment 8
    assert by_id[1].latency_ms == pytest.approx(6.0)
    assert by_id[1].request_time.tzinfo is not None
    assert by_id[2].request_size == len(sized(metadata_v1_request(2, ("b", "c"))))


def test_acks_zero_unanswered_and_request_missing(tmp_path):
    c = Conversation()
    c.request(produce_v3_request(1, acks=0))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(99))
    out = run(tmp_path, c.pcap())
    assert summary(out) == [
        ("no_response", "Produce", 1),
        ("request_missing", "Metadata", 99),  # read as the one request of the connection that reads it
        ("unanswered", "Metadata", 2),
    ]
    missing = out[1]
    assert missing.response["brokers"] and missing.raw_response is None and missing.request is None
    assert missing.api_version == 1 and "read as Metadata v1" in missing.note


def test_a_produce_with_acks_zero_that_a_broker_answers_pairs_with_its_answer(tmp_path):
    """Apache Kafka's brokers send nothing for acks=0; some (Tansu) answer anyway. The answer
    pairs with its request (said in the note) instead of being a response whose request was not
    captured; an acks=0 request a later request's response passes got none (responses come in
    order), and is a no_response row as before."""
    c = Conversation()
    c.request(produce_v3_request(1, acks=0))
    c.request(produce_v3_request(2, acks=0))
    c.response(produce_v3_response(2))
    c.request(produce_v3_request(3, acks=0))
    c.request(metadata_v1_request(4))
    c.response(metadata_v1_response(4))
    out = run(tmp_path, c.pcap())
    assert summary(out) == [
        ("no_response", "Produce", 1),
        ("ok", "Produce", 2),
        ("no_response", "Produce", 3),
        ("ok", "Metadata", 4),
    ]
    assert "answered anyway" in out[1].note and out[1].response is not None and out[1].latency_ms is not None
    assert out[0].response is None and out[0].note.startswith("Produce with acks=0: no response is sent")


def test_reordered_and_retransmitted_segments_change_nothing(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1), pieces=4)
    c.response(metadata_v1_response(1), pieces=4)
    n = len(c.segments)
    order = [0, 1, 3, 2, 5, 4, 6, 8, 7, 9]
    assert sorted(order) == list(range(n))
    out = run(tmp_path, c.pcap(order=order, duplicate=(3, 7)))
    assert summary(out) == [("ok", "Metadata", 1)]


def test_gap_in_a_request_is_reported_and_the_stream_resyncs(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1), pieces=2)  # segments 2 (holds the header) and 3
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(1))
    c.response(metadata_v1_response(2))
    out = run(tmp_path, c.pcap(drop=(3,)))  # the broker's ACKs say segment 3 was sent
    statuses = summary(out)
    assert ("ok", "Metadata", 2) in statuses
    gap = [e for e in out if e.status == "gap"]
    assert gap and gap[0].correlation_id == 1 and "missing" in gap[0].error
    assert gap[0].response is not None  # the response still pairs with the cut request


def test_capture_started_mid_stream_resyncs_on_the_next_request(tmp_path):
    c = Conversation(handshake=False)
    c.send(CLIENT, sized(metadata_v1_request(7))[5:])  # the tail of a request whose start was missed
    c.request(metadata_v1_request(8))
    c.response(metadata_v1_response(8))
    out = run(tmp_path, c.pcap())
    assert ("ok", "Metadata", 8) in summary(out)
    skipped = [e for e in out if e.status == "gap"]
    assert len(skipped) == 1 and "skipped" in skipped[0].error


def test_kafka_on_an_unconfigured_port_is_found_by_content(tmp_path):
    c = Conversation(broker=("10.0.0.2", 19093))
    c.request(metadata_v1_request(1))
    c.response(metadata_v1_response(1))
    out = run(tmp_path, c.pcap())
    assert summary(out) == [("ok", "Metadata", 1)]
    assert out[0].broker_address == "10.0.0.2:19093"
    assert run(tmp_path, c.pcap(), detect_kafka=False) == []


def test_non_kafka_traffic_on_other_ports_is_left_out(tmp_path):
    c = Conversation(broker=("10.0.0.2", 80))
    c.send(CLIENT, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    c.send(c.broker, b"HTTP/1.1 200 OK\r\n\r\n")
    assert run(tmp_path, c.pcap()) == []


def test_tls_is_labelled_not_decoded(tmp_path):
    c = Conversation()
    c.send(CLIENT, bytes([0x16, 0x03, 0x01, 0x00, 0x05]) + b"hello")
    c.send(BROKER, bytes([0x16, 0x03, 0x03, 0x00, 0x02]) + b"hi")
    out = run(tmp_path, c.pcap())
    assert [(e.status, e.request_size, e.response_size) for e in out] == [("tls", 10, 7)]


def test_sasl_tokens_after_handshake_v0_are_labelled(tmp_path):
    c = Conversation()
    c.request(struct.pack(">hhi", 17, 0, 1) + string("app") + string("PLAIN"))  # SaslHandshake v0
    c.response(struct.pack(">ih", 1, 0) + struct.pack(">i", 1) + string("PLAIN"))
    c.send(CLIENT, sized(b"\x00alice\x00secret"))  # raw PLAIN token, no Kafka header
    c.send(BROKER, sized(b""))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(2))
    assert summary(run(tmp_path, c.pcap())) == [("ok", "SaslHandshake", 1), ("sasl", None, None), ("ok", "Metadata", 2)]


def test_a_frame_size_beyond_the_cap_is_a_framing_error(tmp_path):
    c = Conversation()
    c.send(CLIENT, struct.pack(">i", 2**31 - 1) + b"x" * 20)
    c.request(metadata_v1_request(3))
    c.response(metadata_v1_response(3))
    out = run(tmp_path, c.pcap())
    assert ("ok", "Metadata", 3) in summary(out)
    assert any(e.status == "gap" and "framing error" in e.error for e in out)


def test_a_wrong_size_prefix_below_the_cap_does_not_swallow_the_frames_after_it(tmp_path):
    """A size prefix a corrupt byte made plausible but wrong claims more than the connection
    carries: once it ends, a frame confirmed inside the claim shows the claim was wrong, and the
    frames from there on are read (the bad frame is a gap row that says so)."""
    c = Conversation()
    bad = bytearray(sized(metadata_v1_request(2)))
    bad[:4] = struct.pack(">i", 1 << 20)
    c.request(metadata_v1_request(1))
    c.response(metadata_v1_response(1))
    c.send(CLIENT, bytes(bad))
    c.response(metadata_v1_response(2))
    for i in range(3, 7):
        c.request(metadata_v1_request(i))
        c.response(metadata_v1_response(i))
    out = run(tmp_path, c.pcap())
    assert summary(out) == [("ok", "Metadata", 1), ("gap", "Metadata", 2)] + [
        ("ok", "Metadata", i) for i in range(3, 7)
    ]
    assert "size prefix claims 1048576 bytes, but a frame starts" in out[1].error


def test_malformed_request_keeps_raw_bytes_and_still_pairs(tmp_path):
    bad = struct.pack(">hhi", 3, 1, 5) + string("app") + struct.pack(">i", 1) + struct.pack(">h", 40) + b"short"
    c = Conversation()
    c.request(bad)
    c.response(metadata_v1_response(5))
    out = run(tmp_path, c.pcap())
    assert summary(out) == [("malformed", "Metadata", 5)]
    assert out[0].raw_request == bad and "claimed length 40" in out[0].error and out[0].response is not None


def test_truncated_capture_file_is_a_row(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1))
    c.response(metadata_v1_response(1))
    data = c.pcap()
    out = run(tmp_path, data[:-10])
    assert any(e.status == "capture_error" and "truncated" in e.error for e in out)
    assert any(e.correlation_id == 1 for e in out)


@pytest.mark.parametrize("filters", [{"apis": [0]}, {"window_ns": (1, None)}])
def test_a_truncated_file_is_a_row_whatever_the_filters(tmp_path, filters):
    """A problem of the file itself says the read is incomplete: the api and time filters do not
    hide it (or FAILFAST would pass a broken file read for some apis only)."""
    c = Conversation()
    c.request(metadata_v1_request(1))
    c.response(metadata_v1_response(1))
    out = run(tmp_path, c.pcap()[:-10], **filters)
    assert [e.status for e in out if e.status == "capture_error"] == ["capture_error"]


def test_tcpflow_dump_pair(tmp_path):
    requests = sized(metadata_v1_request(1)) + sized(metadata_v1_request(2))
    responses = sized(metadata_v1_response(2)) + sized(metadata_v1_response(1))
    client = tmp_path / "010.000.000.001.50000-010.000.000.002.09092"
    broker = tmp_path / "010.000.000.002.09092-010.000.000.001.50000"
    client.write_bytes(requests)
    broker.write_bytes(responses)
    out = list(read_capture(client))
    assert sorted(summary(out), key=lambda s: s[2]) == [("ok", "Metadata", 1), ("ok", "Metadata", 2)]
    assert out[0].client_address == "10.0.0.1:50000" and out[0].request_time is None
    assert list(read_capture(broker)) == []  # the pair is read once, through the client file
    broker_alone = tmp_path / "alone"
    broker_alone.write_bytes(responses)
    assert [e.status for e in read_capture(broker_alone)] == ["request_missing", "request_missing"]


def test_a_tcpflow_dump_that_starts_mid_frame_is_read_from_its_first_frame(tmp_path):
    """tcpflow joined the connection mid-stream: both files start inside a frame. Each is read
    from its first frame (the bytes before it a gap row that says why), and they still pair."""
    first = sized(metadata_v1_request(1, ("x" * 50,)))
    requests = first + b"".join(sized(metadata_v1_request(i)) for i in range(2, 5))
    responses = sized(metadata_v1_response(1, ("x" * 50,))) + b"".join(
        sized(metadata_v1_response(i)) for i in range(2, 5)
    )
    client = tmp_path / "010.000.000.001.50000-010.000.000.002.09092"
    broker = tmp_path / "010.000.000.002.09092-010.000.000.001.50000"
    client.write_bytes(requests[30:])
    broker.write_bytes(responses[20:])
    out = list(read_capture(client))
    ok = sorted(e.correlation_id for e in out if e.status == "ok")
    assert ok == [2, 3, 4]
    skips = [e for e in out if e.status == "gap"]
    assert all("the dump starts mid-frame" in e.error for e in skips)
    first_response = len(sized(metadata_v1_response(1, ("x" * 50,))))
    assert {(e.request_span, e.response_span) for e in skips} == {
        (None, (0, first_response - 20)),
        ((0, len(first) - 30), None),
    }
    plain = tmp_path / "no-tcpflow-name"
    plain.write_bytes(requests[30:])
    assert [e.status for e in read_capture(plain)] == ["capture_error"]  # content alone: frames from byte 0


def test_a_file_that_is_nothing_we_know_is_a_row(tmp_path):
    out = run(tmp_path, b"hello, this is not a capture", name="notes.txt")
    assert [e.status for e in out] == ["capture_error"]


@pytest.mark.parametrize(
    ("first_bytes", "said"),
    [
        (b"\x04\x22\x4d\x18", "compressed with lz4"),  # (as a size: 69 MB, within a frame's bounds)
        (b"\x28\xb5\x2f\xfd", "compressed with zstd"),
        (b"BZh91AY&SY", "compressed with bzip2"),
        (b"\xfd7zXZ\x00\x00", "compressed with xz"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x34\xcd\xb2\xa1", "a modified (Kuznetzov) pcap"),
    ],
)
def test_a_file_of_a_known_other_kind_is_a_row_that_names_it(tmp_path, first_bytes, said):
    out = run(tmp_path, first_bytes + bytes(range(256)) * 20, name="capture.pcap.x")
    assert [(e.status, said in e.error) for e in out] == [("capture_error", True)]


def test_a_file_whose_first_bytes_read_as_one_frame_longer_than_the_file_is_no_dump(tmp_path):
    """Content alone is weak evidence of a dump: any binary file whose first four bytes read as
    a size would pass for one frame. Its frames must fit the file."""
    out = run(tmp_path, b"\x00\x00\x13\x88" + bytes(range(256)) * 4, name="blob.bin")
    assert [e.status for e in out] == ["capture_error"]


def test_a_directory_or_a_file_gone_is_a_row_not_a_crash(tmp_path):
    """read_capture reads files (spark.read and kafka-wire expand directories): handed a
    directory or a path that is not there, it says so in a capture_error row."""
    for path in (tmp_path, tmp_path / "gone.pcap"):
        [row] = read_capture(path)
        assert row.status == "capture_error" and "cannot open capture" in row.error


def test_a_connection_scope_partitions_the_exchanges_and_can_share_some_apis(samples):
    def by_hash(index: int, shared=None):  # what the Spark layer builds for a split capture
        def scope(endpoints):
            if zlib.crc32("|".join(map(str, endpoints)).encode()) % 3 == index:
                return None
            return shared if shared is not None else False

        return scope

    capture = samples / "tansu_confluent_kafka_all_codecs.pcap"
    whole = sorted((e.connection_id, e.correlation_id) for e in read_capture(capture))
    sliced = [list(read_with(capture, CaptureOptions(issues_here=i == 0), by_hash(i))) for i in range(3)]
    assert sorted((e.connection_id, e.correlation_id) for part in sliced for e in part) == whole
    assert all(part for part in sliced)
    metadata = sorted((e.connection_id, e.correlation_id) for e in read_capture(capture, apis={3}))
    for i in range(3):
        shared = list(read_with(capture, CaptureOptions(apis=frozenset({0, 1, 3})), by_hash(i, frozenset({3}))))
        assert sorted((e.connection_id, e.correlation_id) for e in shared if e.api_key == 3) == metadata
        own = {(e.connection_id, e.correlation_id) for e in sliced[i] if e.api_key in (0, 1)}
        assert {(e.connection_id, e.correlation_id) for e in shared if e.api_key in (0, 1)} == own


def test_a_packet_lost_inside_a_frame_cuts_that_frame_only(tmp_path):
    """The lost packet lies inside a frame whose size was read: its end is known, so it is one
    gap row (paired with its response) and the frames after it are read without a resync; a
    loss that runs past a frame's end, into the next, still needs one."""
    c = Conversation()
    c.request(metadata_v1_request(1, ("a" * 300,)), pieces=4)  # segments 2..5
    c.response(metadata_v1_response(1, ("a" * 300,)))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(2))
    out = run(tmp_path, c.pcap(drop={3}))
    assert summary(out) == [("gap", "Metadata", 1), ("ok", "Metadata", 2)]
    assert "81 bytes missing from the capture (81 of 323" in out[0].error and out[0].response is not None
    assert out[0].request_span == (0, len(sized(metadata_v1_request(1, ("a" * 300,)))))
    across = run(tmp_path, c.pcap(drop={5, 7}), name="across.pcap")  # the frame's last piece and the next request
    assert ("ok", "Metadata", 2) not in summary(across) and summary(across)[0] == ("gap", "Metadata", 1)


def test_packets_whose_headers_the_snaplen_cut_are_said_in_one_row(tmp_path):
    """Cut inside their TCP header (``-s 68`` over IPv6), no packet says its connection: one
    capture_error row says how many there were and why, where the read had no row at all."""
    frames = []
    for i in range(3):
        t = pb.tcp(40000, 9092, 1000 + i, flags=pb.ACK, payload=b"x" * 50)
        frame = pb.ether(pb.ipv6("fd00::1", "fd00::2", t), ethertype=0x86DD)
        frames.append((i * 1000, frame[:68], len(frame)))
    path = tmp_path / "s68.pcap"
    path.write_bytes(pb.pcap(frames, snaplen=68))
    (row,) = read_capture(path, ports=[9092])
    assert row.status == "capture_error"
    assert row.error.startswith("3 packets cut by the capture's snaplen inside their headers (the first at packet 1")


def test_a_file_cut_inside_its_last_packets_headers_is_not_said_to_be_a_snaplen(tmp_path):
    """A killed tcpdump leaves its last packet cut, maybe inside the headers: the truncated_file
    row says so, and no row sends the user after a snaplen."""
    frames = [
        (i * 1000, pb.ether(pb.ipv4("10.0.0.1", "10.0.0.2", pb.tcp(40000, 9092, 1000 + i, payload=b"x"))))
        for i in range(2)
    ]
    path = tmp_path / "killed.pcap"
    path.write_bytes(pb.pcap(frames)[:-15])  # inside the last packet's TCP header
    rows = [e for e in read_capture(path, ports=[9092]) if e.status == "capture_error"]
    assert [e.error.split(" at packet")[0] for e in rows] == ["truncated_file"]


def test_a_gzipped_file_broken_inside_a_packets_headers_is_not_said_to_be_a_snaplen(tmp_path):
    import zlib

    frames = [
        (i * 1000, pb.ether(pb.ipv4("10.0.0.1", "10.0.0.2", pb.tcp(40000, 9092, 1000 + i, payload=b"x"))))
        for i in range(2)
    ]
    raw = pb.pcap(frames)
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(raw[:-15]) + deflate.flush(zlib.Z_FULL_FLUSH)
    path = tmp_path / "broken.pcap.gz"
    path.write_bytes(struct.pack("<BBBBIBB", 0x1F, 0x8B, 8, 0, 0, 0, 255) + body + b"\xff" * 16)
    rows = [e for e in read_capture(path, ports=[9092]) if e.status == "capture_error"]
    assert [e.error.split(" at packet")[0] for e in rows] == ["corrupt_file"]
