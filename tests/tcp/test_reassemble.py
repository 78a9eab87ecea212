"""reassemble() on hand-made segment lists, plus hypothesis properties for ordering and gaps."""

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol_source.capture import ACK, FIN, RST, SYN, read_packets
from kafka_protocol_source.tcp import ConnectionKey, Direction, FlowEvent, StreamChunk, StreamGap, reassemble
from tests.capture import pcapbuild as b
from tests.tcp.segments import C, S, cut_stream, joined, kinds, run, seg, stream_of


def test_in_order_with_handshake_offsets_start_after_syn():
    ev = run(
        [
            seg(99, flags=SYN),
            seg(500, flags=SYN | ACK, src=S, dst=C),
            seg(100, b"abc", index=2),
            seg(103, b"de", index=3),
            seg(501, b"resp", src=S, dst=C, index=4),
        ]
    )
    chunks = [e for e in ev if isinstance(e, StreamChunk)]
    assert [(c.offset, c.data, c.packet_index) for c in chunks] == [(0, b"abc", 2), (3, b"de", 3), (0, b"resp", 4)]
    opened = ev[0]
    assert opened.kind == "open" and opened.initiator == Direction(*C, *S)
    assert chunks[0].conn == ConnectionKey(*C, *S, 0)


def test_out_of_order_and_retransmission():
    ev = run(
        [seg(0, b"aaaa", ts=1), seg(8, b"cccc", ts=3), seg(4, b"bbbb", ts=2), seg(4, b"bbbb", ts=4), seg(0, b"aaaa")]
    )
    chunks = [e for e in ev if isinstance(e, StreamChunk)]
    assert [(c.offset, c.data, c.timestamp_ns) for c in chunks] == [(0, b"aaaa", 1), (4, b"bbbb", 2), (8, b"cccc", 3)]


def test_overlap_with_different_content_first_wins():
    ev = run([seg(0, b"AAAA"), seg(8, b"CCCC"), seg(2, b"xxxxxxxxxx"), seg(6, b"yy")])
    assert joined(ev) == b"AAAAxxxxCCCC"


def test_gap_is_reported_not_spliced():
    ev = run([seg(0, b"aaaa"), seg(10, b"cc"), seg(12, b"dd")])
    assert stream_of(ev) == [b"aaaa", ("gap", 4, 6, "missing"), b"cc", b"dd"]


def test_mid_stream_start_begins_at_first_seq():
    ev = run([seg(123456, b"late"), seg(123460, b"r")])
    assert [(e.offset, e.data) for e in ev if isinstance(e, StreamChunk)] == [(0, b"late"), (4, b"r")]
    assert ev[0].initiator is None


def test_sequence_wraparound():
    start = 2**32 - 6
    ev = run(
        [
            seg(start - 1, flags=SYN),
            seg(start, b"abc"),
            seg(start + 6, b"ghi"),
            seg(start + 3, b"def"),
            seg(start + 9, b"j"),
        ]
    )
    assert joined(ev) == b"abcdefghij" and not any(isinstance(e, StreamGap) for e in ev)


def test_snaplen_cut_becomes_gap():
    ev = run([seg(0, b"ab", missing=3), seg(5, b"ok")])
    assert stream_of(ev) == [b"ab", ("gap", 2, 3, "snaplen_cut"), b"ok"]


def test_fin_close_and_reuse_of_four_tuple():
    ev = run(
        [
            seg(10, flags=SYN),
            seg(11, b"one"),
            seg(14, flags=FIN | ACK),
            seg(50, flags=FIN | ACK, src=S, dst=C),
            seg(15, flags=ACK),  # last ACK after close: not a new connection
            seg(900, flags=SYN),
            seg(901, b"two"),
        ]
    )
    assert kinds(ev) == ["open", "fin", "fin", "close", "open", "close"]
    chunks = [e for e in ev if isinstance(e, StreamChunk)]
    assert [(c.conn.instance, c.data, c.offset) for c in chunks] == [(0, b"one", 0), (1, b"two", 0)]


def test_rst_closes_and_syn_with_new_isn_reuses():
    ev = run(
        [
            seg(10, flags=SYN),
            seg(11, b"x"),
            seg(12, flags=RST),
            seg(12, b"more"),  # right where the RST said its bytes end: the RST did not end them
            seg(70, flags=SYN),
            seg(71, b"y"),
            seg(5000, flags=SYN),
            seg(5001, b"z"),
        ]
    )
    assert kinds(ev) == ["open", "reset", "close", "open", "close", "open", "close"]
    closes = [e.detail for e in ev if isinstance(e, FlowEvent) and e.kind == "close"]
    assert closes == ["reused", "reused", "end_of_capture"]
    chunks = [(c.conn.instance, c.data) for c in ev if isinstance(c, StreamChunk)]
    assert chunks == [(0, b"x"), (0, b"more"), (1, b"y"), (2, b"z")]


def test_syn_ack_first_gives_initiator_hint():
    ev = run([seg(500, flags=SYN | ACK, src=S, dst=C)])
    assert ev[0].initiator == Direction(*C, *S)


def test_buffer_cap_overflow_flushes_with_gap():
    segs = [seg(0, b"a")] + [seg(10 + 10 * i, b"x" * 10) for i in range(5)]
    ev = run(segs, max_buffered_bytes=35)
    assert "overflow" in kinds(ev)
    assert stream_of(ev)[:3] == [b"a", ("gap", 1, 9, "overflow"), b"x" * 10]
    assert joined(ev) == b"a" + b"x" * 50


def test_end_of_capture_flushes_holes_as_gaps():
    ev = run([seg(0, b"ab"), seg(5, b"cd")])
    assert stream_of(ev) == [b"ab", ("gap", 2, 3, "missing"), b"cd"]
    assert kinds(ev)[-1] == "close"


def test_capture_issues_pass_through():
    data = b.pcap([(1, b.ether(b.ipv4("1.1.1.1", "2.2.2.2", b.tcp(1, 2, 0, payload=b"hi"))))])
    ev = list(reassemble(read_packets(io.BytesIO(data[:-1]))))
    assert any(getattr(e, "kind", "") == "truncated_file" for e in ev)


def test_from_a_crafted_capture_both_directions():
    t = 1_700_000_000 * 10**9
    frames = [
        (t, b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(40000, 9092, 99, flags=SYN)))),
        (t + 1, b.ether(b.ipv4("10.0.0.2", "10.0.0.1", b.tcp(9092, 40000, 499, flags=SYN | ACK)))),
        (t + 2, b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(40000, 9092, 105, payload=b"world")))),
        (t + 3, b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(40000, 9092, 100, payload=b"hello")))),
        (t + 4, b.ether(b.ipv4("10.0.0.2", "10.0.0.1", b.tcp(9092, 40000, 500, payload=b"reply")))),
    ]
    ev = list(reassemble(read_packets(io.BytesIO(b.pcap(frames, nanos=True)))))
    chunks = [e for e in ev if isinstance(e, StreamChunk)]
    assert [(c.direction.src_port, c.offset, c.data, c.timestamp_ns - t, c.packet_index) for c in chunks] == [
        (40000, 0, b"hello", 3, 3),
        (40000, 5, b"world", 2, 2),
        (9092, 0, b"reply", 4, 4),
    ]


@settings(max_examples=200, deadline=None)
@given(cut_stream(), st.randoms(use_true_random=False), st.integers(0, 5))
def test_any_permutation_with_duplicates_reassembles(stream, rnd, dups):
    data, pieces, isn = stream
    order = list(pieces) + [rnd.choice(pieces) for _ in range(dups)]
    rnd.shuffle(order)
    # A first segment with the SYN pins offset 0 even when the data arrives out of order.
    segs = [seg(isn, flags=SYN)] + [seg(isn + 1 + off, p) for off, p in order]
    ev = run(segs)
    assert joined(ev) == data
    assert not any(isinstance(e, StreamGap) for e in ev)
    offsets = [e.offset for e in ev if isinstance(e, StreamChunk)]
    assert offsets == sorted(offsets)


@settings(max_examples=200, deadline=None)
@given(cut_stream(), st.randoms(use_true_random=False), st.data())
def test_dropping_a_segment_gives_exactly_one_gap(stream, rnd, draw):
    data, pieces, isn = stream
    if len(pieces) < 3:
        return
    drop = draw.draw(st.integers(1, len(pieces) - 2))  # not the last: nothing after it would reveal the hole
    kept = [p for i, p in enumerate(pieces) if i != drop]
    rnd.shuffle(kept)
    ev = run([seg(isn, flags=SYN)] + [seg(isn + 1 + off, p) for off, p in kept])
    gaps = [e for e in ev if isinstance(e, StreamGap)]
    off, lost = pieces[drop]
    assert [(g.offset, g.length) for g in gaps] == [(off, len(lost))]
    assert joined(ev) == data[:off] + data[off + len(lost) :]


def conversation(isn_c=99, isn_s=499, ts=0):
    """A whole connection: handshake, one request and response, FIN from both sides, last ACK."""
    return [
        seg(isn_c, flags=SYN, ts=ts),
        seg(isn_s, flags=SYN | ACK, src=S, dst=C, ts=ts + 1),
        seg(isn_c + 1, b"request", ts=ts + 2),
        seg(isn_s + 1, b"response", src=S, dst=C, ts=ts + 3),
        seg(isn_c + 8, flags=FIN | ACK, ts=ts + 4),
        seg(isn_s + 9, flags=FIN | ACK, src=S, dst=C, ts=ts + 5),
        seg(isn_c + 9, flags=ACK, ts=ts + 6),
    ]


@given(st.integers(0, 8))
def test_every_segment_seen_again_on_another_interface_is_one_connection(lag):
    # Each copy comes `lag` segments after its original (capturing on `lo` and `any` at once):
    # with a lag past the close, the copy of the SYN must not open the connection a second time.
    original = conversation()
    merged = []
    for i in range(len(original) + lag):
        if i < len(original):
            merged.append(original[i])
        if i >= lag:
            merged.append(original[i - lag])
    ev = run(merged)
    assert kinds(ev) == ["open", "fin", "fin", "close"]
    assert joined(ev) == b"request" and joined(ev, S) == b"response"


def test_a_copy_of_a_closed_connection_with_another_syn_ack_is_still_a_copy():
    """The same packets again (another interface's, appended), the copy with one more SYN-ACK, of
    another ISN, answering the same SYN (the stale one of two): it answers the closed
    connection's SYN, so it is of that handshake, not a new connection whose bytes come out a
    second time (found by fuzzing the choice between two SYN-ACKs)."""
    original = conversation()
    copy = [*original[:1], seg(7000, flags=SYN | ACK, src=S, dst=C, ack=100), *original[1:]]
    ev = run(original + copy)
    assert kinds(ev) == ["open", "fin", "fin", "close"]
    assert joined(ev) == b"request" and joined(ev, S) == b"response"


def test_a_new_connection_on_the_same_ports_after_copies_is_still_new():
    ev = run(conversation() + conversation()[:2] + conversation(isn_c=7000, isn_s=9000, ts=10))
    assert kinds(ev) == ["open", "fin", "fin", "close", "open", "fin", "fin", "close"]
    assert [(c.conn.instance, c.data) for c in ev if isinstance(c, StreamChunk)] == [
        (0, b"request"),
        (0, b"response"),
        (1, b"request"),
        (1, b"response"),
    ]


def test_a_rsts_payload_is_not_the_streams():
    """A RST may carry text that says why (RFC 1122 4.2.2.12); receivers do not deliver it. Here
    the endpoints ignored the reset, and the real bytes at its sequence number follow."""
    ev = run([seg(10, flags=SYN), seg(11, b"ab"), seg(13, b"connection reset by peer", flags=RST), seg(13, b"cd")])
    assert stream_of(ev) == [b"ab", b"cd"]


def test_of_two_syn_acks_with_other_isns_the_one_the_client_acknowledges_numbers_the_brokers_bytes():
    """A server answering a retransmitted SYN with a fresh SYN cookie, or a restarted middlebox,
    gives two SYN-ACKs with different ISNs. The first one written was kept: with the stale one
    first, every byte of the broker's side was taken for a retransmission of bytes before its
    stream and dropped, without a gap (found by review: rev18 r06)."""
    stale, real = seg(7000, flags=SYN | ACK, src=S, dst=C, ack=100), seg(500, flags=SYN | ACK, src=S, dst=C, ack=100)
    for first, second in ((stale, real), (real, stale)):
        ev = run(
            [
                seg(99, flags=SYN),
                first,
                second,
                seg(100, flags=ACK, ack=501),  # the client's ACK names the SYN-ACK it took
                seg(100, b"req", ack=501),
                seg(501, b"response", src=S, dst=C, ack=103),
            ]
        )
        assert stream_of(ev, src=S) == [b"response"] and stream_of(ev) == [b"req"]


def test_without_the_clients_ack_the_brokers_first_byte_picks_its_syn_ack():
    """The client's ACK was not captured: the broker's first byte names the ISN it follows."""
    ev = run(
        [
            seg(99, flags=SYN),
            seg(7000, flags=SYN | ACK, src=S, dst=C),
            seg(500, flags=SYN | ACK, src=S, dst=C),
            seg(501, b"response", src=S, dst=C),
        ]
    )
    assert stream_of(ev, src=S) == [b"response"]


def test_bytes_the_receiver_acknowledged_that_never_came_are_a_missing_gap_at_the_close():
    """The capture lost a request's last packets (the kernel dropped them, tcpdump said so) and
    the connection did not close in it; the broker's answer acknowledges them. They were said to
    be cut by the end of the capture, and the connection counted no gap (found by review:
    rev22 M2). The one sequence number past a side's bytes that a FIN's acknowledgment covers
    is no byte, and a side none of whose bytes was captured is a one-way capture, not a loss."""
    handshake = [seg(99, flags=SYN), seg(499, flags=SYN | ACK, src=S, dst=C, ack=100)]
    ev = run([*handshake, seg(100, b"abc", ack=500), seg(500, b"resp", src=S, dst=C, ack=110)])
    assert stream_of(ev) == [b"abc", ("gap", 3, 7, "missing")]
    assert stream_of(ev, src=S) == [b"resp"]
    ev = run([*handshake, seg(100, b"abc", ack=500), seg(500, b"resp", src=S, dst=C, ack=104)])
    assert stream_of(ev) == [b"abc"]
    ev = run([*handshake, seg(100, b"abc", ack=500), seg(103, flags=ACK, ack=900)])
    assert stream_of(ev, src=S) == []
