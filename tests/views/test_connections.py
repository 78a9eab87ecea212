"""The connections view against tshark on every sample capture, and on crafted captures.

tshark's facts are per tcp.stream: frames and tcp.len bytes each way, tcp.analysis.retransmission
and out_of_order, initial RTT, first/last frame times, FIN and RST frames; ``-z conv,tcp`` gives
the frames each way too. The Kafka side of a row must be exactly the exchanges read on it.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict

import pytest

from kafka_protocol_source.views.connections import CONNECTION_COLUMNS, read_connections
from kafka_protocol_source.views.outcomes import error_codes
from tests.capture import pcapbuild as pb
from tests.framing.kafkaflow import metadata_v1_request, metadata_v1_response, sized
from tests.samples.catalog import exchanges, sample, sample_names
from tests.tshark_tcp import TSHARK, conversations, tcp_facts

PACKET_SAMPLES = [n for n in sample_names() if not n.startswith("tcpflow_")]
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


@functools.cache
def rows(name: str) -> tuple[dict, ...]:
    s = sample(name)
    return tuple(read_connections(s.path, ports=[s.broker_port]))


def micros(t) -> int:
    return round(t.timestamp() * 1_000_000)


@needs_tshark
@pytest.mark.parametrize("name", PACKET_SAMPLES)
def test_every_tcp_stream_is_one_row_with_tshark_s_packets_bytes_times_and_rtt(name):
    ours = sorted(rows(name), key=lambda r: r["first_packet_time"])
    theirs = tcp_facts(str(sample(name).path))
    assert len(ours) == len(theirs)
    for row, ref in zip(ours, theirs, strict=True):
        client, broker = ref.sides[row["client_address"]], ref.sides[row["broker_address"]]
        assert (row["client_packets"], row["client_bytes"]) == (client.frames, client.bytes)
        assert (row["broker_packets"], row["broker_bytes"]) == (broker.frames, broker.bytes)
        assert (row["client_retransmissions"], row["broker_retransmissions"]) == (
            client.retransmissions,
            broker.retransmissions,
        )
        assert (row["client_out_of_order"], row["broker_out_of_order"]) == (client.out_of_order, broker.out_of_order)
        assert round(row["handshake_rtt_ms"] * 1e6) == ref.initial_rtt_ns
        assert (micros(row["first_packet_time"]), micros(row["last_packet_time"])) == (
            ref.first_ns // 1000,
            ref.last_ns // 1000,
        )


@needs_tshark
@pytest.mark.parametrize("name", PACKET_SAMPLES)
def test_frames_each_way_are_those_of_tshark_s_conversation_table(name):
    ours = {frozenset((r["client_address"], r["broker_address"])): r for r in rows(name)}
    table = conversations(str(sample(name).path))
    assert len(table) == len(ours)
    for a, b, b_to_a, a_to_b in table:
        row = ours[frozenset((a, b))]
        sent = {row["client_address"]: row["client_packets"], row["broker_address"]: row["broker_packets"]}
        assert (sent[a], sent[b]) == (a_to_b, b_to_a)


@needs_tshark
@pytest.mark.parametrize("name", PACKET_SAMPLES)
def test_how_each_connection_ended_is_what_its_fin_and_rst_frames_say(name):
    ours = sorted(rows(name), key=lambda r: r["first_packet_time"])
    for row, ref in zip(ours, tcp_facts(str(sample(name).path)), strict=True):
        client, broker = ref.sides[row["client_address"]], ref.sides[row["broker_address"]]
        if client.resets or broker.resets:
            assert row["ended"] == "reset"
            assert row["ended_by"] == ("client" if client.resets else "broker")
        elif client.fins and broker.fins:
            assert row["ended"] == "fin"
        else:
            assert row["ended"] == "end_of_capture"


@pytest.mark.parametrize("name", sample_names())
def test_the_kafka_side_of_each_row_is_the_exchanges_read_on_that_connection(name):
    by_connection = defaultdict(list)
    for e in exchanges(name):
        if e.connection_id:
            by_connection[e.connection_id].append(e)
    ours = {r["connection_id"]: r for r in rows(name)}
    assert set(by_connection) <= set(ours)
    for connection_id, row in ours.items():
        mine = by_connection.get(connection_id, [])
        assert row["kafka"] == bool(mine)
        assert row["exchanges"] == len(mine)
        assert row["client_ids"] == sorted({e.client_id for e in mine if e.client_id})
        assert row["exchanges_not_ok"] == sum(e.status != "ok" for e in mine)
        # the view finds error codes where the spec puts them; a walk of every body finds the same
        walked = [error_codes(e.response) for e in mine if e.response]
        assert row["error_responses"] == sum(1 for codes in walked if codes)
        assert row["error_codes"] == sorted({c for codes in walked for c in codes})
        assert list(row) == list(CONNECTION_COLUMNS)


def _error_name(exception_repr: str) -> str:
    """kafka-python's / aiokafka's error class (``UnsupportedVersionError(None)``) as Kafka names it."""
    cls = exception_repr.split("(", 1)[0].removesuffix("Error")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls).upper()


@pytest.mark.parametrize(
    "name",
    ["mock_kafka_python_legacy_magic1", "mock_kafka_python_legacy_magic0", "tansu_kafka_python_legacy_magic1_rejected"],
)
def test_produce_requests_the_broker_refused_are_error_responses_on_their_producer_s_connection(name):
    refused = Counter()
    for record in sample(name).manifest["records"]:
        if record["error"]:
            refused[(f"kw-producer-{record['codec']}", _error_name(record["error"]))] += 1
    assert refused
    produce_rows = [r for r in rows(name) if "Produce" in r["api_names"]]
    seen = {(r["client_ids"][0], n) for r in produce_rows for n in r["error_names"]}
    assert seen == set(refused)
    assert all(r["error_responses"] == 0 for r in produce_rows if r["client_ids"][0] not in {c for c, _ in refused})


def test_a_stream_dump_has_the_kafka_facts_and_no_tcp_facts():
    [row] = rows("tcpflow_tansu_confluent_kafka_all_codecs")
    assert row["kafka"] and row["exchanges"] == 4 and row["client_ids"] == ["kw-producer-none"]
    assert row["client_packets"] is None and row["ended"] is None and row["handshake_rtt_ms"] is None


# -- crafted: retransmission, a lost segment, a non-Kafka neighbour ---------------------

C, B, WEB, OTHER = ("10.0.0.1", 50000), ("10.0.0.2", 9092), ("10.0.0.2", 80), ("10.0.0.3", 40000)
MS, T0 = 10**6, 1_700_000_000 * 10**9


def _packet(at_ms, src, dst, seq, ack, flags, payload=b""):
    return T0 + int(at_ms * MS), pb.ether(pb.ipv4(src[0], dst[0], pb.tcp(src[1], dst[1], seq, ack, flags, payload)))


def crafted(tmp_path):
    request, response = sized(metadata_v1_request(7)), sized(metadata_v1_response(7))
    half = len(response) // 2
    packets = [
        _packet(0, C, B, 100, 0, pb.SYN),
        _packet(0.2, B, C, 900, 101, pb.SYN | pb.ACK),
        _packet(0.4, C, B, 101, 901, pb.ACK),
        _packet(1, C, B, 101, 901, pb.ACK | pb.PSH, request),
        _packet(400, C, B, 101, 901, pb.ACK | pb.PSH, request),  # sent again after a timeout
        _packet(401, B, C, 901 + half, 101 + len(request), pb.ACK | pb.PSH, response[half:]),  # first half lost
        _packet(402, C, B, 101 + len(request), 901 + len(response), pb.ACK),
        _packet(403, B, C, 901 + len(response), 101 + len(request), pb.RST | pb.ACK),
        _packet(500, OTHER, WEB, 7, 0, pb.SYN),
        _packet(500.1, WEB, OTHER, 70, 8, pb.SYN | pb.ACK),
        _packet(500.2, OTHER, WEB, 8, 71, pb.ACK | pb.PSH, b"GET / HTTP/1.1\r\n\r\n"),
    ]
    path = tmp_path / "crafted.pcap"
    path.write_bytes(pb.pcap(packets, nanos=True))
    return path, half


def test_a_crafted_capture_s_retransmission_gap_reset_and_non_kafka_neighbour(tmp_path):
    path, half = crafted(tmp_path)
    kafka, web = sorted(read_connections(path, ports=[9092], detect_kafka=False), key=lambda r: r["first_packet_time"])
    assert kafka["connection_id"] == "10.0.0.1:50000->10.0.0.2:9092#0" and kafka["kafka"]
    assert (kafka["client_retransmissions"], kafka["broker_retransmissions"]) == (1, 0)
    assert (kafka["broker_gaps"], kafka["broker_bytes_missing"]) == (1, half)
    assert (kafka["ended"], kafka["ended_by"]) == ("reset", "broker")
    assert kafka["handshake_rtt_ms"] == pytest.approx(0.4)
    assert kafka["exchanges"] >= 1 and kafka["client_ids"] == ["app"]
    assert kafka["exchanges_not_ok"] == kafka["exchanges"]  # the response lost its first half
    assert not web["kafka"] and web["exchanges"] == 0
    assert (web["client_address"], web["broker_address"]) == ("10.0.0.3:40000", "10.0.0.2:80")  # the SYN's sender
    assert web["ended"] == "end_of_capture" and web["client_bytes"] == 18


@needs_tshark
def test_the_crafted_capture_agrees_with_tshark(tmp_path):
    path, _ = crafted(tmp_path)
    ours = sorted(read_connections(path, ports=[9092], detect_kafka=False), key=lambda r: r["first_packet_time"])
    for row, ref in zip(ours, tcp_facts(str(path)), strict=True):
        client, broker = ref.sides[row["client_address"]], ref.sides[row["broker_address"]]
        assert (row["client_packets"], row["client_bytes"], row["client_retransmissions"]) == (
            client.frames,
            client.bytes,
            client.retransmissions,
        )
        assert (row["broker_packets"], row["broker_bytes"], row["broker_retransmissions"]) == (
            broker.frames,
            broker.bytes,
            broker.retransmissions,
        )
        assert row["broker_gaps"] == broker.lost_segments  # "previous segment not captured"


def test_a_packet_seen_again_on_another_interface_is_a_copy_among_the_retransmissions(tmp_path):
    """The same traffic on two interfaces (``-i any``): tshark counts every second copy as a
    retransmission, and so do we; ``copies`` says which were the packet seen again, so that
    ``retransmissions - copies`` ranks what the network resent. A packet sent again 200 ms later
    is a retransmission and no copy."""
    from tests.cuts import Cut, segments_of

    s = sample("tansu_confluent_kafka_all_codecs")
    segments = segments_of(s.path)
    files = [str(Cut(segments).write(tmp_path / "eth0.pcap")), str(Cut(segments).write_cooked(tmp_path / "any.pcap"))]
    twice = list(read_connections(files, ports=[s.broker_port]))
    once = {r["connection_id"]: r for r in rows("tansu_confluent_kafka_all_codecs")}
    assert sorted(r["connection_id"] for r in twice) == sorted(once)
    for row in twice:
        alone = once[row["connection_id"]]
        for side in ("client", "broker"):
            assert row[f"{side}_packets"] == 2 * alone[f"{side}_packets"]
            assert row[f"{side}_retransmissions"] - row[f"{side}_copies"] == alone[f"{side}_retransmissions"] == 0
    assert sum(r["client_copies"] + r["broker_copies"] for r in twice) == 197  # the review's count
    data = next(i for i, seg in enumerate(segments) if seg.payload)
    resent = segments[data]._replace(timestamp_ns=segments[data].timestamp_ns + 200_000_000)
    later = sorted([*segments, resent], key=lambda seg: seg.timestamp_ns)
    (row,) = [
        r
        for r in read_connections(str(Cut(tuple(later)).write(tmp_path / "resent.pcap")), ports=[s.broker_port])
        if r["client_address"].endswith(f":{segments[data].src_port}")
        or r["broker_address"].endswith(f":{segments[data].src_port}")
    ]
    assert row["client_retransmissions"] + row["broker_retransmissions"] == 1
    assert row["client_copies"] + row["broker_copies"] == 0


@pytest.mark.parametrize("ports", [(), None])
def test_a_connection_without_payload_is_oriented_by_the_brokers_other_connections_found(ports, tmp_path):
    """A capture joined late sees some connections only as ACKs and a FIN: no SYN, no Kafka byte
    to say which side is the client. Without ``ports`` its row named the broker as the client
    (127.0.0.1:33325->127.0.0.1:46820, found by review); the other connections' exchanges found
    the broker at that address."""
    from tests.cuts import late_start, segments_of

    s = sample("tansu_confluent_kafka_all_codecs")
    path = late_start(segments_of(s.path), 150).write(tmp_path / "late150.pcap")
    got = list(read_connections(str(path), ports=ports if ports is not None else [s.broker_port]))
    silent = [r for r in got if not r["kafka"]]
    assert silent, "the cut leaves a connection without payload"
    assert {r["broker_address"] for r in got} == {"127.0.0.1:33325"}


def test_a_fast_retransmission_on_a_fast_link_is_no_copy(tmp_path):
    """The broker resends a segment 400 us after it, after the client's duplicate ACKs (a data
    centre's RTT of 100 us): a retransmission the network made, not a copy (found by review)."""
    import struct

    client, broker = ("10.0.0.1", 50000), ("10.0.0.2", 9092)
    packets, t = [], 1_700_000_000 * 10**9

    def send(ns, src, dst, seq, ack, flags, payload=b""):
        tcp = pb.tcp(src[1], dst[1], seq, ack, flags=flags, payload=payload)
        packets.append((ns, pb.ether(pb.ipv4(src[0], dst[0], tcp))))

    cs, bs = 1000, 5000
    send(t, client, broker, cs, 0, pb.SYN)
    send(t + 50_000, broker, client, bs, cs + 1, pb.SYN | pb.ACK)
    send(t + 100_000, client, broker, cs + 1, bs + 1, pb.ACK)
    cs, bs = cs + 1, bs + 1
    request = struct.pack(">ihhi", 10, 18, 0, 1) + b"\x00\x00"  # ApiVersions v0
    send(t + 200_000, client, broker, cs, bs, pb.ACK | pb.PSH, request)
    cs += len(request)
    data = [bytes([i]) * 1000 for i in range(6)]
    for i, d in enumerate(data):
        send(t + 300_000 + i * 10_000, broker, client, bs + i * 1000, cs, pb.ACK, d)
    for j in range(4):  # the second segment was lost after the capture point: duplicate ACKs
        send(t + 400_000 + j * 20_000, client, broker, cs, bs + 1000, pb.ACK)
    send(t + 700_000, broker, client, bs + 1000, cs, pb.ACK, data[1])
    path = tmp_path / "fast.pcap"
    path.write_bytes(pb.pcap(packets, nanos=True))
    (row,) = read_connections(str(path))
    assert (row["broker_retransmissions"], row["broker_copies"]) == (1, 0)
