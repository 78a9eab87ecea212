"""Connections that end and begin again on the same ports, as captures joined mid-stream see
them: SYNs of a new ISN, copies of a connection's own SYN written late, bytes still arriving after
a RST or written after the FINs (``tcp.flows``, ``DirectionStream.takes_syn``).
"""

import pytest

from kafka_protocol_source.capture import ACK, FIN, RST, SYN
from kafka_protocol_source.tcp import FlowEvent, StreamChunk, StreamGap
from kafka_protocol_source.tcp.stream import REORDER_WINDOW
from tests.tcp.segments import OTHER, C, S, elsewhere, joined, numbered, run, seg


@pytest.mark.parametrize("end", [None, "reset"])
def test_a_syn_with_a_new_isn_after_a_start_joined_mid_stream_is_a_new_connection(end):
    """The capture joined a connection without its SYN (its ISN unknown), and later a SYN of
    another ISN on the same 4-tuple comes, with the old connection's end not captured or its
    RST just before: a new connection, its bytes its own, once the old start has settled (a
    SYN just before a provisional start, or captured before its first bytes, is that stream's
    own, written late)."""
    old = numbered([seg(5000, b"old", src=S, dst=C, ts=1_000), seg(7000, b"ask", ts=1_010)])
    ending = [seg(7003, flags=RST, index=1 + REORDER_WINDOW, ts=2_000)] if end else []
    new_start = 2 + REORDER_WINDOW
    new = numbered(
        [seg(100, flags=SYN, ts=3_000), seg(101, b"new", ts=3_010), seg(900, b"reply", src=S, dst=C, ts=3_020)],
        new_start,
    )
    ev = run([*old, *elsewhere(REORDER_WINDOW, 2), *ending, *new])
    ours = [
        e
        for e in ev
        if isinstance(e, StreamChunk | StreamGap | FlowEvent) and OTHER[1] not in (e.conn.a_port, e.conn.b_port)
    ]
    chunks = [(c.conn.instance, c.data) for c in ours if isinstance(c, StreamChunk)]
    assert chunks == [(0, b"old"), (0, b"ask"), (1, b"new"), (1, b"reply")]
    closes = [e.detail for e in ours if isinstance(e, FlowEvent) and e.kind == "close"]
    assert closes == ["reset" if end else "reused", "end_of_capture"]
    assert not [e for e in ours if isinstance(e, StreamGap)]


def test_a_response_still_arriving_after_a_rst_stays_on_its_connection_however_many_packets_it_takes():
    """The client reset the connection with a response on its way: the response's segments keep
    coming, each after more than a few other packets, over more than the window in all. Each
    one that brings bytes starts the wait again, so they all land on the connection."""
    start = numbered([seg(99, flags=SYN), seg(499, flags=SYN | ACK, src=S, dst=C), seg(100, b"ask")])
    events, index = [*start, seg(500, b"r" * 10, src=S, dst=C, index=3), seg(103, flags=RST, index=4)], 5
    for i in range(1, 10):
        events += elsewhere(REORDER_WINDOW // 4, index)
        index += REORDER_WINDOW // 4
        events.append(seg(500 + 10 * i, b"r" * 10, src=S, dst=C, index=index))
        index += 1
    ev = [e for e in run(events) if OTHER[1] not in (e.conn.a_port, e.conn.b_port)]
    assert joined(ev, S) == b"r" * 100
    assert {e.conn.instance for e in ev} == {0}
    assert not [e for e in ev if isinstance(e, StreamGap)]


def test_bytes_from_where_a_closed_stream_ended_are_not_taken_for_a_retransmission():
    """Past the wait after a RST, the peer's next bytes begin right where its stream ended: new
    bytes (on the 4-tuple's next connection, joined mid-stream), not a late copy to drop."""
    start = numbered([seg(99, flags=SYN), seg(499, flags=SYN | ACK, src=S, dst=C), seg(100, b"ask")])
    after = 5 + REORDER_WINDOW
    ev = run(
        [
            *start,
            seg(500, b"resp", src=S, dst=C, index=3),
            seg(103, flags=RST, index=4),
            *elsewhere(REORDER_WINDOW, 5),
            seg(504, b"more", src=S, dst=C, index=after),
        ]
    )
    ours = [e for e in ev if OTHER[1] not in (e.conn.a_port, e.conn.b_port)]
    assert [(c.conn.instance, c.data) for c in ours if isinstance(c, StreamChunk) and c.direction.src_port == S[1]] == [
        (0, b"resp"),
        (1, b"more"),
    ]


def test_bytes_written_after_their_connections_fins_are_not_taken_for_copies():
    """Pieces of a rotated capture concatenated out of time order can put a connection's FINs
    before its data: the connection closes on its FINs with no byte seen, and its bytes, coming
    after, cannot be copies of any: they are read (as the 4-tuple's next connection)."""
    ev = run(
        numbered(
            [
                seg(500, flags=FIN | ACK),
                seg(900, flags=FIN | ACK, src=S, dst=C),
                seg(490, b"request...", ack=890),
                seg(880, b"response..", src=S, dst=C, ack=500),
            ]
        )
    )
    assert joined(ev, C) == b"request..." and joined(ev, S) == b"response.."


def test_copies_of_bytes_already_there_do_not_hold_a_reset_connection_open():
    """Only new bytes restart the wait after a RST: a peer resending what it sent before (it gets
    no ACK from the side that reset) does not keep the connection open while it goes on."""
    start = numbered([seg(99, flags=SYN), seg(499, flags=SYN | ACK, src=S, dst=C), seg(100, b"ask")])
    events = [*start, seg(500, b"r" * 10, src=S, dst=C, index=3), seg(103, flags=RST, index=4)]
    events += elsewhere(1, 5)
    index, sent = 6, 0  # (the other connection's bytes follow on from its SYN's: delivered as they come)
    for _ in range(10):
        events += [seg(1000 + sent + i, b"z", src=OTHER, index=index + i) for i in range(REORDER_WINDOW // 4)]
        index, sent = index + REORDER_WINDOW // 4, sent + REORDER_WINDOW // 4
        events.append(seg(500, b"r" * 10, src=S, dst=C, index=index))
        index += 1
    ev = run(events)
    ours = [isinstance(e, FlowEvent) and OTHER[1] not in (e.conn.a_port, e.conn.b_port) for e in ev]
    close = next(i for i, e in enumerate(ev) if ours[i] and e.kind == "close")
    others_before = sum(
        1 for e in ev[:close] if isinstance(e, StreamChunk) and OTHER[1] in (e.conn.a_port, e.conn.b_port)
    )
    assert others_before <= REORDER_WINDOW + REORDER_WINDOW // 4


@pytest.mark.parametrize("syn_time", ["before", "after"])
def test_a_connections_own_syn_written_late_is_not_a_new_connection(syn_time):
    """The capture joined a connection without its SYN, and the SYN is written long after (one
    interface's copy appended after the other's, capture queues out of order): right before the
    first byte seen, or stamped before it, it is the connection's own, not a reuse."""
    first = 1_000
    old = numbered([seg(100, b"ask", ts=first), seg(500, b"answer", src=S, dst=C, ts=first + 10)])
    isn, ts = (99, first + 5_000) if syn_time == "after" else (50, first - 10)  # (50: bytes before the capture)
    late = seg(isn, flags=SYN, index=2 + REORDER_WINDOW, ts=ts)
    more = seg(103, b"more", ts=first + 6_000, index=3 + REORDER_WINDOW)
    ev = run([*old, *elsewhere(REORDER_WINDOW, 2), late, more])
    ours = [e for e in ev if isinstance(e, StreamChunk | FlowEvent) and OTHER[1] not in (e.conn.a_port, e.conn.b_port)]
    assert {e.conn.instance for e in ours} == {0}
    assert joined(ours, C) == b"askmore"


def test_a_syn_after_a_side_only_the_peer_spoke_on_is_a_new_connection():
    """A capture that holds only the broker's last bytes of a connection (its response to a
    request sent before the capture), then a new connection on the same ports: the new SYN,
    captured after those bytes, is not the silent side's own."""
    old = numbered([seg(500, b"late answer", src=S, dst=C, ts=1_000)])
    new = numbered([seg(7000, flags=SYN, ts=2_000), seg(7001, b"ask", ts=3_000)], 1)
    ev = [e for e in run([*old, *new]) if isinstance(e, StreamChunk)]
    assert [(c.conn.instance, c.data) for c in ev] == [(0, b"late answer"), (1, b"ask")]
