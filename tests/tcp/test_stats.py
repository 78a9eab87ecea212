"""tcp.stats: per-connection TCP facts, on crafted captures whose every segment is known, and
checked against tshark's sequence analysis of the same files (tcp.analysis.retransmission,
out_of_order, initial_rtt; frames and tcp.len per side)."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source.capture import read_packets
from kafka_protocol_source.tcp.stats import LINGER_NS, connection_stats
from tests.capture import pcapbuild as pb
from tests.tshark_tcp import TSHARK, tcp_facts

C, B = ("10.0.0.1", 50000), ("10.0.0.2", 9092)
MS = 10**6
T0 = 1_700_000_000 * 10**9
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


class Script:
    """Segments in capture order, each at ``at`` ms after the start."""

    def __init__(self):
        self.packets = []

    def add(self, at_ms: float, src, dst, seq: int, ack: int, flags: int, payload: bytes = b"") -> Script:
        frame = pb.ether(pb.ipv4(src[0], dst[0], pb.tcp(src[1], dst[1], seq, ack, flags=flags, payload=payload)))
        self.packets.append((T0 + int(at_ms * MS), frame))
        return self

    def pcap(self) -> bytes:
        return pb.pcap(self.packets, nanos=True)

    def stats(self):
        return list(connection_stats(read_packets(io.BytesIO(self.pcap()))))


def handshake(s: Script, at=0.0, c=C, b=B, isn_c=1000, isn_b=5000) -> Script:
    return (
        s.add(at, c, b, isn_c, 0, pb.SYN)
        .add(at + 0.5, b, c, isn_b, isn_c + 1, pb.SYN | pb.ACK)
        .add(at + 1.0, c, b, isn_c + 1, isn_b + 1, pb.ACK)
    )


def side(stats, endpoint):
    return stats.sent_by(*endpoint)


def clean_connection() -> Script:
    s = handshake(Script())
    s.add(2, C, B, 1001, 5001, pb.ACK | pb.PSH, b"q" * 40)
    s.add(3, B, C, 5001, 1041, pb.ACK | pb.PSH, b"r" * 300)
    s.add(4, C, B, 1041, 5301, pb.ACK)
    s.add(5, C, B, 1041, 5301, pb.FIN | pb.ACK)
    s.add(6, B, C, 5301, 1042, pb.FIN | pb.ACK)
    return s.add(7, C, B, 1042, 5302, pb.ACK)  # after both FINs: the connection is closed, the ACK still counts


def test_a_clean_connection_counts_every_segment_and_its_handshake():
    [stats] = clean_connection().stats()
    assert (side(stats, C).packets, side(stats, C).payload_bytes) == (6, 40)
    assert (side(stats, B).packets, side(stats, B).payload_bytes) == (3, 300)
    assert stats.handshake_rtt_ns == 1 * MS
    assert (stats.first_ns, stats.last_ns) == (T0, T0 + 7 * MS)
    assert stats.ended == "fin" and stats.closed_by.src_port == C[1]
    assert stats.initiator.src_port == C[1]
    assert all(
        getattr(side(stats, e), f) == 0
        for e in (C, B)
        for f in ("retransmissions", "out_of_order", "gaps", "bytes_missing")
    )


def timeout_retransmission() -> Script:
    s = handshake(Script())
    s.add(2, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 100)
    s.add(300, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 100)  # no ACK came: sent again
    return s.add(301, B, C, 5001, 1101, pb.ACK)


def test_a_timeout_retransmission_is_counted_for_its_sender():
    [stats] = timeout_retransmission().stats()
    assert side(stats, C).retransmissions == 1 and side(stats, C).out_of_order == 0
    assert side(stats, C).payload_bytes == 200  # on the wire twice, as tshark's tcp.len counts it
    assert side(stats, B).retransmissions == 0


def swapped_segments() -> Script:
    s = handshake(Script())
    s.add(2.0, C, B, 1101, 5001, pb.ACK | pb.PSH, b"b" * 100)  # the second segment arrives first
    s.add(2.1, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 100)
    return s.add(3, B, C, 5001, 1201, pb.ACK)


def test_segments_swapped_within_the_rtt_are_out_of_order_not_retransmitted():
    [stats] = swapped_segments().stats()
    assert (side(stats, C).out_of_order, side(stats, C).retransmissions) == (1, 0)
    assert side(stats, C).gaps == 0  # reassembly filled the hole


def acked_unseen_then_resent() -> Script:
    s = handshake(Script())
    s.add(1.10, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a")
    s.add(1.11, B, C, 5001, 1002, pb.ACK | pb.PSH, b"b")
    s.add(1.12, C, B, 1002, 5003, pb.ACK)  # acknowledges a byte of the broker's the capture missed
    s.add(1.13, C, B, 1003, 5003, pb.ACK | pb.PSH, b"d")  # the byte at 1002 is missing...
    return s.add(1.14, C, B, 1002, 5003, pb.ACK | pb.PSH, b"c")  # ... and comes within the RTT


def test_a_segment_resent_after_an_ack_of_unseen_data_counts_as_wireshark_counts_it():
    # Wireshark marks the broker's duplicate-ACK count when the client acknowledges data it never
    # showed, and its fast-retransmission test then holds: a retransmission, not a reordering.
    [stats] = acked_unseen_then_resent().stats()
    assert (side(stats, C).retransmissions, side(stats, C).out_of_order) == (1, 0)


def test_a_segment_never_captured_is_a_gap_of_its_length():
    s = handshake(Script())
    s.add(2, C, B, 1101, 5001, pb.ACK | pb.PSH, b"b" * 100)  # bytes 1001..1100 were sent, not captured
    s.add(3, B, C, 5001, 1201, pb.ACK)  # the broker has them all
    [stats] = s.stats()
    assert (side(stats, C).gaps, side(stats, C).bytes_missing) == (1, 100)
    assert side(stats, C).retransmissions == side(stats, C).out_of_order == 0


def spurious_retransmission() -> Script:
    s = handshake(Script())
    s.add(2, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 100)
    s.add(2.2, B, C, 5001, 1101, pb.ACK)
    return s.add(2.4, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 100)


def test_data_already_acknowledged_sent_again_is_a_spurious_retransmission():
    [stats] = spurious_retransmission().stats()
    assert side(stats, C).retransmissions == 1


def keep_alives() -> Script:
    s = handshake(Script())
    s.add(2, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 100)
    s.add(3, B, C, 5001, 1101, pb.ACK)
    s.add(4000, C, B, 1100, 5001, pb.ACK)  # seq one below the next: a keep-alive
    return s.add(8000, C, B, 1100, 5001, pb.ACK, b"\x00")  # ... with its one garbage byte


def test_keep_alives_are_neither_retransmitted_nor_reordered():
    [stats] = keep_alives().stats()
    assert side(stats, C).retransmissions == side(stats, C).out_of_order == 0


def reset_by_broker() -> Script:
    s = handshake(Script())
    s.add(2, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 10)
    return s.add(3, B, C, 5001, 1011, pb.RST | pb.ACK)


def test_a_reset_ends_the_connection_and_says_who_sent_it():
    [stats] = reset_by_broker().stats()
    assert stats.ended == "reset" and stats.closed_by.src_port == B[1]


def test_without_the_handshake_there_is_no_rtt_and_the_end_is_the_capture_s():
    s = Script()
    s.add(0, C, B, 1001, 5001, pb.ACK | pb.PSH, b"a" * 10)
    s.add(1, B, C, 5001, 1011, pb.ACK | pb.PSH, b"b" * 20)
    [stats] = s.stats()
    assert stats.handshake_rtt_ns is None and stats.syn_ns is None
    assert stats.ended == "end_of_capture" and stats.closed_by is None
    assert (side(stats, C).payload_bytes, side(stats, B).payload_bytes) == (10, 20)


def reused_four_tuple() -> Script:
    s = handshake(Script())
    s.add(2, C, B, 1001, 5001, pb.FIN | pb.ACK).add(3, B, C, 5001, 1002, pb.FIN | pb.ACK)
    s.add(4, C, B, 1002, 5002, pb.ACK)
    handshake(s, at=10, isn_c=90000, isn_b=70000)
    return s.add(12, C, B, 90001, 70001, pb.ACK | pb.PSH, b"x" * 7)


def test_a_reused_four_tuple_gives_two_connections_with_their_own_packets():
    first, second = sorted(reused_four_tuple().stats(), key=lambda c: c.key.instance)
    assert (first.key.instance, second.key.instance) == (0, 1)
    assert (side(first, C).packets, side(first, B).packets) == (4, 2)
    assert (side(second, C).packets, side(second, C).payload_bytes) == (3, 7)
    assert first.ended == "fin" and second.ended == "end_of_capture"


def test_a_closed_connection_is_given_out_once_its_linger_time_has_passed():
    s = handshake(Script())
    s.add(2, C, B, 1001, 5001, pb.FIN | pb.ACK).add(3, B, C, 5001, 1002, pb.FIN | pb.ACK)
    other = ("10.0.0.3", 40000)
    handshake(s, at=4, c=other)
    s.add(LINGER_NS / MS + 10, other, B, 1001, 5001, pb.ACK | pb.PSH, b"z")
    out = connection_stats(read_packets(io.BytesIO(s.pcap())))
    first = next(out)  # before the end of the capture: the first connection is final
    assert first.key.a_ip == C[0] or first.key.b_ip == C[0]
    assert len(list(out)) == 1


# -- against tshark ------------------------------------------------------------------


def assert_same_as_tshark(data: bytes, tmp_path):
    path = tmp_path / "capture.pcap"
    path.write_bytes(data)
    ours = sorted(connection_stats(read_packets(str(path))), key=lambda c: c.first_packet)
    theirs = tcp_facts(str(path))
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine.handshake_rtt_ns == ref.initial_rtt_ns
        assert (mine.first_ns, mine.last_ns) == (ref.first_ns, ref.last_ns)
        for d in (mine.a_to_b, mine.b_to_a):
            endpoint = f"{d.direction.src_ip}:{d.direction.src_port}"
            want = ref.sides.get(endpoint)
            got = (d.packets, d.payload_bytes, d.retransmissions, d.out_of_order)
            assert got == (
                (want.frames, want.bytes, want.retransmissions, want.out_of_order) if want else (0, 0, 0, 0)
            ), endpoint


@needs_tshark
@pytest.mark.parametrize(
    "scenario",
    [
        clean_connection,
        timeout_retransmission,
        swapped_segments,
        spurious_retransmission,
        keep_alives,
        reset_by_broker,
        reused_four_tuple,
        acked_unseen_then_resent,
    ],
    ids=lambda f: f.__name__,
)
def test_each_scenario_agrees_with_tshark(scenario, tmp_path):
    assert_same_as_tshark(scenario().pcap(), tmp_path)


@st.composite
def mangled_conversations(draw):
    """A request/response conversation, each message in one to three segments, where segments are
    sometimes sent twice (later, by a timeout, or at once) or swapped with the next one, at
    irregular times (some closer together than the handshake RTT)."""
    s = handshake(Script())
    seq = {C: 1001, B: 5001}
    events = []
    for i in range(draw(st.integers(2, 6))):
        src = C if i % 2 == 0 else B
        dst = B if src == C else C
        for _ in range(draw(st.integers(1, 3))):
            size = draw(st.integers(1, 300))
            events.append((src, dst, seq[src], seq[dst], pb.ACK | pb.PSH, bytes([65 + i]) * size))
            seq[src] += size
        if draw(st.booleans()):
            events.append((dst, src, seq[dst], seq[src], pb.ACK, b""))
    packets = list(events)
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, len(packets) - 2))
        packets[i], packets[i + 1] = packets[i + 1], packets[i]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(packets) - 1))
        if packets[i][5]:
            packets.insert(draw(st.integers(i + 1, len(packets))), packets[i])
    at = 2.0
    for p in packets:
        at += draw(st.sampled_from([0.01, 0.3, 2.0, 250.0]))
        s.add(at, *p)
    return s.pcap()


@needs_tshark
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mangled_conversations())
def test_retransmissions_and_reordering_agree_with_tshark_on_mangled_conversations(data, tmp_path):
    tcp_facts.cache_clear()
    assert_same_as_tshark(data, tmp_path)
