"""read_capture on crafted captures for the edge cases that need real bytes on a real link.

Complements tests/framing/test_read_capture.py (pairing, acks=0, reordering, gaps, resync,
detection, SASL, TLS, dumps): here the same Kafka conversations travel over VLAN tags, IPv6 and
Linux SLL2, with nanosecond timing, over a pcapng whose interfaces carry one direction each, and
through a file or a snaplen that cuts a frame, a reused 4-tuple and a reset. Conversations are
laid out by tests/framing/kafkaflow.Conversation; this module only chooses the link layer.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kafka_protocol_source import read_capture
from tests.capture import pcapbuild as pb
from tests.framing.kafkaflow import Conversation, metadata_v1_request, metadata_v1_response, sized

T0 = 1_700_000_000 * 10**9


def ether(ip: bytes, v6: bool) -> bytes:
    return pb.ether(ip, 0x86DD if v6 else 0x0800)


def packets(segments, link=ether) -> list[tuple[int, bytes]]:
    """(ns, link frame) per segment of a Conversation, over IPv4 or IPv6 as its addresses say."""
    out = []
    for ns, src, dst, seq, ack, flags, payload in segments:
        v6 = ":" in src[0]
        tcp = pb.tcp(src[1], dst[1], seq, ack, flags=flags, payload=payload)
        out.append((ns, link(pb.ipv6(src[0], dst[0], tcp) if v6 else pb.ipv4(src[0], dst[0], tcp), v6)))
    return out


def read(tmp_path, data: bytes, name="c.pcap", **options):
    path = tmp_path / name
    path.write_bytes(data)
    return list(read_capture(path, **options))


def summary(exchanges):
    return [(e.status, e.api_name, e.correlation_id) for e in exchanges]


def two_metadata_exchanges(c: Conversation) -> Conversation:
    c.request(metadata_v1_request(1, ("a",)), pieces=2)
    c.response(metadata_v1_response(1, ("a",)), pieces=3)
    c.request(metadata_v1_request(2, ("b", "c")))
    c.response(metadata_v1_response(2, ("b", "c")))
    return c


def assert_two_ok(out):
    assert summary(out) == [("ok", "Metadata", 1), ("ok", "Metadata", 2)]
    assert [t["name"] for t in out[1].response["topics"]] == ["b", "c"]


# -- links and addresses -------------------------------------------------------------------


@pytest.mark.parametrize("vlans", [((0x8100, 7),), ((0x88A8, 100), (0x8100, 7))], ids=["802.1Q", "QinQ"])
def test_vlan_tagged_kafka(tmp_path, vlans):
    c = two_metadata_exchanges(Conversation())
    out = read(tmp_path, pb.pcap(packets(c.segments, lambda ip, v6: pb.ether(ip, 0x0800, vlans=vlans))))
    assert_two_ok(out)
    assert out[0].client_address == "10.0.0.1:50000" and out[0].broker_address == "10.0.0.2:9092"


def test_ipv6_kafka(tmp_path):
    c = two_metadata_exchanges(Conversation(client=("2001:db8::1", 50000), broker=("2001:db8::2", 9092)))
    out = read(tmp_path, pb.pcap(packets(c.segments)))
    assert_two_ok(out)
    assert out[0].client_address == "[2001:db8::1]:50000" and out[0].broker_address == "[2001:db8::2]:9092"
    assert out[0].connection_id == "[2001:db8::1]:50000->[2001:db8::2]:9092#0"


def test_ipv6_kafka_on_an_unconfigured_port_is_found_by_content(tmp_path):
    c = two_metadata_exchanges(Conversation(client=("fd00::1", 50000), broker=("fd00::2", 29092)))
    out = read(tmp_path, pb.pcap(packets(c.segments)))
    assert_two_ok(out)
    assert out[0].broker_address == "[fd00::2]:29092"


def test_sll2_kafka(tmp_path):
    c = two_metadata_exchanges(Conversation())
    out = read(
        tmp_path, pb.pcap(packets(c.segments, lambda ip, v6: pb.sll2(ip, 0x86DD if v6 else 0x0800)), linktype=276)
    )
    assert_two_ok(out)


# -- timing --------------------------------------------------------------------------------


def timed_exchange(latency_ns: int) -> Conversation:
    c = Conversation(handshake=False, start_ns=T0 + 123_456_789)
    c.request(metadata_v1_request(1))
    c.ns = T0 + 123_456_789 + latency_ns  # the response's only packet arrives this much later
    c.response(metadata_v1_response(1))
    return c


def test_nanosecond_pcap_keeps_nanosecond_latency(tmp_path):
    c = timed_exchange(1_234_567)
    [e] = read(tmp_path, pb.pcap(packets(c.segments), nanos=True))
    assert e.status == "ok" and e.latency_ms == pytest.approx(1.234567, abs=1e-9)
    assert e.request_time == datetime.fromtimestamp(1_700_000_000, timezone.utc).replace(microsecond=123_456)
    # the same capture at microsecond precision loses the last three digits, no more
    [e_us] = read(tmp_path, pb.pcap(packets(c.segments), nanos=False), name="us.pcap")
    assert e_us.latency_ms == pytest.approx(1.235, abs=1e-9)  # 123456 us -> 124691 us


def test_request_time_is_exact_to_the_microsecond(tmp_path):
    # float seconds since 1970 carry about 16 digits: times near a second boundary must not round up
    for frac_ns in (999_999_999, 999_999_500, 1_000, 0):
        c = Conversation(handshake=False, start_ns=T0 + frac_ns)
        c.request(metadata_v1_request(1))
        c.response(metadata_v1_response(1))
        [e] = read(tmp_path, pb.pcap(packets(c.segments), nanos=True))
        want = datetime.fromtimestamp(1_700_000_000, timezone.utc).replace(microsecond=frac_ns // 1000)
        assert e.request_time == want, frac_ns


def test_pcapng_with_one_interface_per_direction(tmp_path):
    # interface 0 (Ethernet, ns ticks) sees the client's packets; interface 1 (SLL2, default
    # us ticks) the broker's: one connection, its two directions timed on different clocks.
    c = two_metadata_exchanges(Conversation())
    c.segments[-1] = (c.segments[-1][0] + 777_000, *c.segments[-1][1:])  # the last response: 1.777 ms after its request
    blocks = []
    for (ns, frame), seg in zip(packets(c.segments), c.segments, strict=True):
        if seg[1] == c.client:
            blocks.append(("epb", 0, ns, frame))
        else:
            ip = frame[14:]  # strip the Ethernet header, carry the IP packet over SLL2
            blocks.append(("epb", 1, ns // 1000, pb.sll2(ip)))
    out = read(tmp_path, pb.pcapng([(1, 9, None, 0), (276, None, None, 0)], blocks), name="two.pcapng")
    assert_two_ok(out)
    assert [e.latency_ms for e in out] == [pytest.approx(4.0), pytest.approx(1.777)]
    assert out[0].request_packet == 2 and out[0].response_packet == 4


# -- cut and missing bytes -----------------------------------------------------------------


def test_file_truncated_inside_the_last_packet_cuts_the_frame_it_carries(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(1))
    c.response(metadata_v1_response(2), pieces=2)
    out = read(tmp_path, pb.pcap(packets(c.segments), nanos=True)[:-20])
    assert summary(out)[:2] == [("ok", "Metadata", 1), ("gap", "Metadata", 2)]
    cut = out[1]
    assert cut.request is not None and "cut short" in cut.error
    # the response read up to the cut: its brokers, not the topics the lost bytes held
    assert cut.response == {"brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}]}
    assert "the response holds its fields up to the cut" in cut.error
    assert cut.response_size == len(sized(metadata_v1_response(2)))
    assert len(cut.raw_response) < cut.response_size - 4
    assert out[2].status == "capture_error" and "truncated_file" in out[2].error


def test_snaplen_cut_inside_a_frame_gives_a_gap_row_and_later_frames_decode(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1))
    c.response(metadata_v1_response(1), pieces=3)  # segments 3, 4, 5
    c.request(metadata_v1_request(2), pieces=2)
    c.response(metadata_v1_response(2))
    pk = packets(c.segments)
    ns, frame = pk[4]
    pk[4] = (ns, frame[:-10], len(frame))  # the middle piece lost its last 10 bytes to the snaplen
    out = read(tmp_path, pb.pcap(pk, snaplen=len(frame) - 10))
    assert summary(out)[0] == ("gap", "Metadata", 1)
    assert "snaplen" in out[0].error and out[0].request is not None
    assert out[0].response == {"brokers": [{"node_id": 1, "host": "localhost"}]}  # read up to the cut
    assert all(e.status == "gap" for e in out[1:-1])  # the rest of the cut frame, skipped
    assert summary(out)[-1] == ("ok", "Metadata", 2)
    assert not any(e.status == "capture_error" for e in out)  # shown as the gap, not twice


def test_snaplen_cut_in_a_request_keeps_its_header_and_pairs_the_response(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1, ("x" * 200,)))
    c.response(metadata_v1_response(1, ("x" * 200,)))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(2))
    pk = packets(c.segments)
    ns, frame = pk[2]
    pk[2] = (ns, frame[:120], len(frame))
    out = read(tmp_path, pb.pcap(pk, snaplen=120))
    assert summary(out) == [("gap", "Metadata", 1), ("ok", "Metadata", 2)]
    cut = out[0]  # its header is read from the bytes present; the body cannot be
    assert cut.api_version == 1 and cut.request == {"topics": []} and len(cut.raw_request) == 120 - 14 - 20 - 20 - 4
    assert cut.response is not None and cut.response_size == len(sized(metadata_v1_response(1, ("x" * 200,))))


# -- connections ---------------------------------------------------------------------------


def close(c: Conversation) -> None:
    c._segment(c.client, c.broker, pb.FIN | pb.ACK, b"")
    c.seq[c.client] += 1
    c._segment(c.broker, c.client, pb.FIN | pb.ACK, b"")
    c.seq[c.broker] += 1


def renumber(c: Conversation, client_delta: int, broker_delta: int) -> list[tuple]:
    """The segments of ``c`` with both ISNs moved, as a client reconnecting would choose new ones."""
    out = []
    for ns, src, dst, seq, ack, flags, payload in c.segments:
        mine, theirs = (client_delta, broker_delta) if src == c.client else (broker_delta, client_delta)
        out.append((ns, src, dst, seq + mine, ack + theirs if ack else 0, flags, payload))
    return out


@pytest.mark.parametrize("closed_first", [True, False], ids=["after-FIN", "new-SYN-new-ISN"])
def test_a_reused_four_tuple_is_two_connections_with_their_own_correlation_ids(tmp_path, closed_first):
    first = Conversation()
    first.request(metadata_v1_request(1, ("a",)))
    first.response(metadata_v1_response(1, ("a",)))
    first.request(metadata_v1_request(2, ("a",)))  # never answered: the client reconnects
    if closed_first:
        close(first)
    second = Conversation(start_ns=first.ns + 10**9)
    second.request(metadata_v1_request(1, ("b",)))  # correlation ids restart on the new connection
    second.response(metadata_v1_response(1, ("b",)))
    second.request(metadata_v1_request(2, ("b",)))
    second.response(metadata_v1_response(2, ("b",)))
    segments = first.segments + renumber(second, 7_000_000, 9_000_000)
    out = read(tmp_path, pb.pcap(packets(segments)))
    by_conn = {}
    for e in out:
        by_conn.setdefault(e.connection_id, []).append(
            (e.status, e.correlation_id, e.response and e.response["topics"][0]["name"])
        )
    assert by_conn == {
        "10.0.0.1:50000->10.0.0.2:9092#0": [("ok", 1, "a"), ("unanswered", 2, None)],
        "10.0.0.1:50000->10.0.0.2:9092#1": [("ok", 1, "b"), ("ok", 2, "b")],
    }


def test_rst_in_the_middle_of_a_response(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(1))
    c.send(c.broker, sized(metadata_v1_response(2))[:20])  # the broker dies mid-response
    c._segment(c.broker, c.client, pb.RST | pb.ACK, b"")
    later = Conversation(client=("10.0.0.1", 50001), start_ns=c.ns + 10**6)  # the client reconnects
    later.request(metadata_v1_request(1))
    later.response(metadata_v1_response(1))
    out = read(tmp_path, pb.pcap(packets(c.segments + later.segments)))
    # (the reset connection's last row comes once the capture has gone on past the RST a while,
    # or at its end: the peer's bytes in flight still cross the wire after a RST)
    first, second = [[e for e in out if e.connection_id.startswith(f"10.0.0.1:{port}->")] for port in (50000, 50001)]
    assert summary(first) == [("ok", "Metadata", 1), ("gap", "Metadata", 2)]
    assert summary(second) == [("ok", "Metadata", 1)]
    cut = first[1]
    assert cut.request is not None and cut.response == {"brokers": [{"node_id": 1}]} and "cut short" in cut.error
    assert cut.raw_response == sized(metadata_v1_response(2))[4:20]


def reset_by_the_client_with_a_request_open() -> Conversation:
    c = Conversation()
    c.request(metadata_v1_request(1))
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(1))
    c._segment(c.client, c.broker, pb.RST | pb.ACK, b"")
    return c


def test_rst_from_the_client_leaves_its_open_request_unanswered(tmp_path):
    c = reset_by_the_client_with_a_request_open()
    out = read(tmp_path, pb.pcap(packets(c.segments)))
    assert summary(out) == [("ok", "Metadata", 1), ("unanswered", "Metadata", 2)]
    assert "reset (RST)" in out[1].error


def test_a_response_in_flight_when_the_client_resets_still_answers_its_request(tmp_path):
    # The broker had sent it before the RST reached it (or the capture wrote it after the RST):
    # it crossed the wire, so the request was answered; not a new connection either.
    c = reset_by_the_client_with_a_request_open()
    c.send(c.broker, sized(metadata_v1_response(2)))
    out = read(tmp_path, pb.pcap(packets(c.segments)))
    assert summary(out) == [("ok", "Metadata", 1), ("ok", "Metadata", 2)]
    assert len({e.connection_id for e in out}) == 1


@pytest.mark.parametrize("handshake", [True, False])
def test_a_snaplen_that_cuts_every_frame_keeps_every_header_and_pairing(tmp_path, handshake):
    """tcpdump -s 120: nearly every frame is cut, in every packet it spans. Each frame's end is
    known from its size, so every request keeps its header and pairs with its response, in a
    connection captured from its SYN and in one joined mid-stream (like tshark, which reads the
    header of every cut packet). Every byte is still in exactly one row (tests/accounting.py)."""
    from tests.accounting import check_accounting

    c = Conversation(handshake=handshake)
    topics = tuple("t" * 90 + str(i) for i in range(3))
    for i in range(1, 7):
        c.request(metadata_v1_request(i, topics), pieces=2)
        c.response(metadata_v1_response(i, topics), pieces=3)
    snap = 120
    cut = [(ns, frame[:snap], len(frame)) for ns, frame in packets(c.segments)]
    path = tmp_path / "cut.pcap"
    path.write_bytes(pb.pcap(cut, snaplen=snap))
    out = list(read_capture(path))
    assert summary(out) == [("gap", "Metadata", i) for i in range(1, 7)]
    assert all(e.client_id == "app" and "cut off by the capture (its snaplen" in e.error for e in out)
    assert [e.response_size for e in out] == [len(sized(metadata_v1_response(i, topics))) for i in range(1, 7)]
    assert check_accounting(path) == []
