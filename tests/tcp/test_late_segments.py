"""Captures that write a segment late: after the ACK that covers it, after its sender's FIN or RST.

The tcp stage waits ``REORDER_WINDOW`` packets of the capture for such a segment before it
gives its bytes up as a gap or closes the connection.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol_source.capture import ACK, FIN, RST, SYN
from kafka_protocol_source.tcp import FlowEvent, StreamChunk, StreamGap
from kafka_protocol_source.tcp.stream import REORDER_WINDOW
from tests.tcp.segments import OTHER, C, S, cut_stream, elsewhere, joined, kinds, numbered, run, seg, stream_of

HANDSHAKE = (seg(99, flags=SYN), seg(499, flags=SYN | ACK, src=S, dst=C))


def test_a_segment_written_after_the_ack_that_covers_it_fills_its_hole():
    ev = run(
        numbered(
            [
                seg(99, flags=SYN),
                seg(100, b"aaaa"),
                seg(108, b"cccc"),
                seg(500, src=S, dst=C, flags=ACK, ack=112),  # the broker has all 12 bytes
                seg(500, src=S, dst=C, flags=ACK, ack=112),
                seg(104, b"bbbb"),  # ... and the capture writes the middle one now
            ]
        )
    )
    assert stream_of(ev) == [b"aaaa", b"bbbb", b"cccc"]


def test_an_acknowledged_hole_becomes_a_gap_once_the_reorder_window_has_passed():
    head = numbered([seg(99, flags=SYN), seg(100, b"aaaa"), seg(108, b"cccc")])
    first_ack = seg(500, src=S, dst=C, flags=ACK, ack=112, index=3)
    meanwhile = elsewhere(REORDER_WINDOW, 4)
    ack_after = seg(500, src=S, dst=C, flags=ACK, ack=112, index=4 + REORDER_WINDOW)
    ev = run([*head, first_ack, *meanwhile, ack_after, seg(112, b"dd", index=5 + REORDER_WINDOW)])
    assert stream_of(ev) == [b"aaaa", ("gap", 4, 4, "missing"), b"cccc", b"dd"]
    # given up on at the ACK after the window, not held until the connection ends
    gap = next(i for i, e in enumerate(ev) if isinstance(e, StreamGap))
    assert not any(isinstance(e, FlowEvent) and e.kind == "close" for e in ev[:gap])
    # ... and not before it: after an ACK inside the window the hole is still open, until the end
    early = run([*head, first_ack, *meanwhile[:-1], ack_after._replace(packet_index=3 + REORDER_WINDOW)])
    gap = next(i for i, e in enumerate(early) if isinstance(e, StreamGap))
    elsewhere_at = [i for i, e in enumerate(early) if isinstance(e, StreamChunk) and e.direction.src_port == OTHER[1]]
    last_elsewhere = max(elsewhere_at)
    assert gap > last_elsewhere


def test_a_segment_written_after_both_fins_is_still_read():
    ev = run(
        numbered(
            [
                *HANDSHAKE,
                seg(100, b"request"),
                seg(107, flags=FIN | ACK),  # the client's FIN: its bytes end at 107
                seg(508, flags=FIN | ACK, src=S, dst=C, ack=108),  # the broker's FIN came before its response
                seg(500, b"response", src=S, dst=C, ack=108),  # ... which the capture wrote late
                seg(108, flags=ACK, ack=510),
            ]
        )
    )
    assert joined(ev) == b"request"
    assert stream_of(ev, S) == [b"response"]
    assert kinds(ev) == ["open", "fin", "fin", "close"]
    assert not any(isinstance(e, StreamGap) for e in ev)
    close = next(e for e in ev if isinstance(e, FlowEvent) and e.kind == "close")
    assert close.detail == "fin"


def test_bytes_a_fin_says_were_sent_that_never_come_are_a_gap_after_the_window():
    conv = numbered(
        [
            *HANDSHAKE,
            seg(100, b"request"),
            seg(107, flags=FIN | ACK),
            seg(508, flags=FIN | ACK, src=S, dst=C, ack=108),  # 8 response bytes before it, never captured
        ]
    )
    ev = run([*conv, *elsewhere(REORDER_WINDOW + 1, len(conv))])
    assert stream_of(ev, S) == [("gap", 0, 8, "missing")]
    closes = [
        e for e in ev if isinstance(e, FlowEvent) and e.kind == "close" and OTHER[0] not in (e.conn.a_ip, e.conn.b_ip)
    ]
    assert [c.detail for c in closes] == ["fin"]
    closed_at = ev.index(closes[0])
    assert closed_at < len(ev) - 1  # by the window, before the end of the capture
    # at the end of the capture, it is closed by its FINs too
    ev = run(conv)
    assert stream_of(ev, S) == [("gap", 0, 8, "missing")]
    assert [e.detail for e in ev if isinstance(e, FlowEvent) and e.kind == "close"] == ["fin"]


def test_a_segment_written_after_its_senders_rst_is_still_read():
    ev = run(
        numbered(
            [
                *HANDSHAKE,
                seg(100, b"requ"),
                seg(500, b"response", src=S, dst=C, ack=104),
                seg(107, flags=RST),  # the client's RST came before its last segment ...
                seg(104, b"est"),  # ... which the capture wrote late
            ]
        )
    )
    assert joined(ev) == b"request" and joined(ev, S) == b"response"
    assert kinds(ev) == ["open", "reset", "close"]
    assert not any(isinstance(e, StreamGap) for e in ev)


def test_bytes_right_after_a_senders_own_rst_go_on_its_stream():
    """A RST its sender's bytes go on right after (a middlebox's reset the endpoints ignored, a
    flag a corrupt packet set) did not end them: they are read, and the connection stays open."""
    ev = run(
        numbered([*HANDSHAKE, seg(100, b"requ"), seg(104, flags=RST), seg(104, b"est"), seg(500, b"ok", src=S, dst=C)])
    )
    assert joined(ev) == b"request" and joined(ev, S) == b"ok"
    assert kinds(ev) == ["open", "reset", "close"]
    assert [e.detail for e in ev if isinstance(e, FlowEvent) and e.kind == "close"] == ["end_of_capture"]


def test_bytes_further_past_a_senders_rst_are_a_new_connection():
    """Bytes from well past where a side's RST said its bytes end are a new use of the 4-tuple
    (its SYN not captured): the connection closes as reset, and a new one has them."""
    ev = run(numbered([*HANDSHAKE, seg(100, b"request"), seg(107, flags=RST), seg(90_000, b"other")]))
    assert [(c.conn.instance, c.data) for c in ev if isinstance(c, StreamChunk)] == [(0, b"request"), (1, b"other")]
    assert kinds(ev) == ["open", "reset", "close", "open", "close"]
    assert [e.detail for e in ev if isinstance(e, FlowEvent) and e.kind == "close"] == ["reset", "end_of_capture"]


def test_a_rst_ahead_of_its_senders_bytes_that_a_fin_follows_says_nothing_is_missing():
    """A reset its endpoints ignored (out of the receiver's window, or a middlebox's guess): the
    sender goes on and ends with a FIN, which says where its bytes end."""
    ev = run(
        numbered(
            [
                *HANDSHAKE,
                seg(100, b"requ"),
                seg(1104, flags=RST),
                seg(104, b"est"),
                seg(500, b"ok", src=S, dst=C, ack=107),
                seg(107, flags=FIN | ACK, ack=502),
                seg(502, flags=FIN | ACK, src=S, dst=C, ack=108),
            ]
        )
    )
    assert stream_of(ev) == [b"requ", b"est"] and joined(ev, S) == b"ok"
    assert [e.detail for e in ev if isinstance(e, FlowEvent) and e.kind == "close"] == ["fin"]


def test_a_rst_far_ahead_of_what_the_receiver_acknowledged_says_nothing_is_missing():
    ev = run(
        numbered(
            [
                *HANDSHAKE,
                seg(100, b"requ"),
                seg(100_104, flags=RST),
                seg(104, b"est"),
                seg(500, b"ok", src=S, dst=C, ack=107),
            ]
        )
    )
    assert stream_of(ev) == [b"requ", b"est"] and not any(isinstance(e, StreamGap) for e in ev)


def test_bytes_a_receiver_acknowledged_before_a_rst_are_missing_if_not_captured():
    ev = run(numbered([*HANDSHAKE, seg(100, b"requ"), seg(500, b"ok", src=S, dst=C, ack=110), seg(110, flags=RST)]))
    assert stream_of(ev) == [b"requ", ("gap", 4, 6, "missing")]


def test_an_older_ack_written_late_does_not_take_back_what_the_receiver_acknowledged():
    ev = run(
        numbered(
            [
                *HANDSHAKE,
                seg(100, b"requ"),
                seg(500, b"ok", src=S, dst=C, ack=110),
                seg(502, src=S, dst=C, flags=ACK, ack=104),  # a duplicate ACK from before, written late
                seg(110, flags=RST),
            ]
        )
    )
    assert stream_of(ev) == [b"requ", ("gap", 4, 6, "missing")]


def test_the_peers_bytes_in_flight_when_a_rst_is_sent_are_read():
    ev = run(
        numbered(
            [
                *HANDSHAKE,
                seg(100, b"request"),
                seg(107, flags=RST),  # the client gives up ...
                seg(500, b"response", src=S, dst=C, ack=107),  # ... while the response is on its way
            ]
        )
    )
    assert joined(ev) == b"request" and joined(ev, S) == b"response"
    assert kinds(ev) == ["open", "reset", "close"]
    assert [e.detail for e in ev if isinstance(e, FlowEvent) and e.kind == "close"] == ["reset"]


@st.composite
def acknowledged_conversation(draw):
    """A client's segments, each acknowledged by the broker at once, then both FINs; and the same
    packets as a capture may write them: some data segments moved later, past the ACKs and FINs
    that come after them, by fewer packets than REORDER_WINDOW."""
    data, pieces, isn = draw(cut_stream())
    packets = [seg(isn, flags=SYN), seg(7000, flags=SYN | ACK, src=S, dst=C, ack=isn + 1)]
    for off, p in pieces:
        packets.append(seg(isn + 1 + off, p))
        packets.append(seg(7001, flags=ACK, src=S, dst=C, ack=isn + 1 + off + len(p)))
    end = isn + 1 + len(data)
    packets += [seg(end, flags=FIN | ACK, ack=7001), seg(7001, flags=FIN | ACK, src=S, dst=C, ack=end + 1)]
    packets.append(seg(end + 1, flags=ACK, ack=7002))
    written = list(packets)
    for i in sorted(draw(st.sets(st.integers(0, len(pieces) - 1), max_size=5)), reverse=True):
        at = written.index(packets[2 + 2 * i])
        later = min(len(written) - 1, at + draw(st.integers(1, min(40, REORDER_WINDOW - 1))))
        written.insert(later, written.pop(at))
    return data, numbered(written)


@settings(max_examples=200, deadline=None)
@given(acknowledged_conversation())
def test_segments_written_late_past_acks_and_fins_lose_nothing(conv):
    data, written = conv
    ev = run(written)
    assert joined(ev) == data
    assert not any(isinstance(e, StreamGap) for e in ev)
    assert kinds(ev) == ["open", "fin", "fin", "close"]


def test_a_capture_joined_mid_connection_reads_its_first_segments_in_whatever_order_written():
    """Without the SYN, the first segment written is offset 0 only until one from before it
    comes: then that one is, and its bytes are read, not taken for a retransmission."""
    ev = run(numbered([seg(1004, b"bbbb"), seg(1000, b"aaaa"), seg(1008, b"cccc"), seg(996, b"zzzz")]))
    assert stream_of(ev) == [b"zzzz", b"aaaa", b"bbbb", b"cccc"]
    assert next((c.offset, c.data) for c in ev if isinstance(c, StreamChunk)) == (0, b"zzzz")


def test_a_syn_written_after_data_sent_after_it_is_where_its_stream_starts():
    ev = run(
        numbered(
            [
                seg(99, flags=SYN),
                seg(508, b"third", src=S, dst=C, ack=100),  # written before the SYN/ACK ...
                seg(499, flags=SYN | ACK, src=S, dst=C, ack=100),
                seg(500, b"one", src=S, dst=C, ack=100),
                seg(503, b"two..", src=S, dst=C, ack=100),
            ]
        )
    )
    assert [(c.offset, c.data) for c in ev if isinstance(c, StreamChunk)] == [(0, b"one"), (3, b"two.."), (8, b"third")]


def test_a_provisional_start_settles_after_the_reorder_window():
    """Once the window has passed, offset 0 stays: a segment from before it is a retransmission
    of bytes sent before the capture, as in any stream, and the bytes since came in order."""
    head = numbered([seg(1000, b"aaaa")])
    later = seg(1004, b"bbbb", index=1 + REORDER_WINDOW)
    ev = run([*head, *elsewhere(REORDER_WINDOW, 1), later, seg(996, b"old!", index=2 + REORDER_WINDOW)])
    assert stream_of(ev) == [b"aaaa", b"bbbb"]


def test_a_hole_after_an_earlier_segment_at_a_mid_connection_start_is_a_gap():
    ev = run(numbered([seg(1010, b"later"), seg(1000, b"early")]))
    assert stream_of(ev) == [b"early", ("gap", 5, 5, "missing"), b"later"]


def test_bytes_the_snaplen_cut_are_filled_by_a_fuller_copy_once_such_copies_are_seen():
    """Interfaces of different snaplens merged: each packet twice, the cut copy first. The first
    cut is a gap before its fuller copy comes (nothing says one will); from then on cut bytes
    are held for the window, and the fuller copy fills them in."""
    cut_then_whole = [
        (seg(100, b"ab", missing=3), seg(100, b"abcde")),
        (seg(105, b"fg", missing=3), seg(105, b"fghij")),
        (seg(110, b"k", missing=4), seg(110, b"klmno")),
    ]
    ev = run(numbered([seg(99, flags=SYN)] + [s for pair in cut_then_whole for s in pair]))
    assert stream_of(ev) == [b"ab", ("gap", 2, 3, "snaplen_cut"), b"fg", b"hij", b"k", b"lmno"]
    # a cut no copy fills is a gap still: at the close, or once the window has passed
    held = [seg(99, flags=SYN), seg(100, b"ab", missing=3), seg(100, b"abcde"), seg(105, b"fg", missing=3)]
    assert stream_of(run(numbered(held)))[-2:] == [b"fg", ("gap", 7, 3, "snaplen_cut")]
    later = seg(110, b"klmno", index=5 + REORDER_WINDOW)
    ev = run([*numbered(held), *elsewhere(REORDER_WINDOW, 4), later])
    assert stream_of(ev)[-3:] == [b"fg", ("gap", 7, 3, "snaplen_cut"), b"klmno"]
