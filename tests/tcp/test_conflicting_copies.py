"""Retransmitted copies whose bytes differ from the first copy: the first is kept, and said.

The tcp stage compares a copy with the bytes it still holds (buffered out of order, or the last
chunk delivered) and yields a ``StreamConflict`` for the bytes that differ; bytes delivered
before the last chunk are no longer held, and a copy of them is not compared.
"""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol_source.capture import SYN
from kafka_protocol_source.tcp import StreamConflict
from tests.tcp.segments import C, S, cut_stream, joined, numbered, run, seg

HANDSHAKE = (seg(99, flags=SYN),)


def conflicts(events):
    return [(e.offset, e.length, e.packet_index) for e in events if isinstance(e, StreamConflict)]


def test_a_differing_copy_of_the_last_packet_is_said_and_the_first_copy_kept():
    ev = run(numbered([*HANDSHAKE, seg(100, b"hello world"), seg(100, b"hello wXrlD"), seg(111, b"!")]))
    assert joined(ev) == b"hello world!"
    assert conflicts(ev) == [(7, 4, 2)]  # from the first byte that differs to the last
    conflict = next(e for e in ev if isinstance(e, StreamConflict))
    assert (conflict.direction.src_port, conflict.conn.instance) == (40000, 0)


def test_a_keep_alive_whose_byte_differs_is_not_a_conflict():
    """A keep-alive repeats the last byte sent (seq = next - 1), and that byte may be any
    (RFC 1122 4.2.3.6, "garbage octet"): not a retransmitted copy to compare, as tshark reads it."""
    ev = run(numbered([*HANDSHAKE, seg(100, b"hello world"), seg(110, b"\0"), seg(111, b"!")]))
    assert joined(ev) == b"hello world!"
    assert conflicts(ev) == []


def test_an_identical_copy_is_not_a_conflict():
    ev = run(numbered([*HANDSHAKE, seg(100, b"hello world"), seg(100, b"hello world"), seg(106, b"world!")]))
    assert joined(ev) == b"hello world!"
    assert conflicts(ev) == []


def test_a_copy_that_runs_past_the_delivered_bytes_is_compared_where_it_overlaps():
    ev = run(numbered([*HANDSHAKE, seg(100, b"hello"), seg(103, b"LO world")]))
    assert joined(ev) == b"hello world"
    assert conflicts(ev) == [(3, 2, 2)]


def test_a_differing_copy_of_bytes_held_out_of_order_is_said():
    ev = run(
        numbered(
            [
                *HANDSHAKE,
                seg(100, b"aaaa"),
                seg(108, b"cccc"),  # held: bytes 4..8 are not in yet
                seg(108, b"ccXc"),
                seg(104, b"bbbbcccY"),  # fills the hole, and differs from the held bytes too
            ]
        )
    )
    assert joined(ev) == b"aaaabbbbcccc"
    assert conflicts(ev) == [(10, 1, 3), (11, 1, 4)]


def test_a_copy_overlapping_the_last_chunk_and_held_bytes_is_said_once():
    ev = run(numbered([*HANDSHAKE, seg(100, b"aaaa"), seg(108, b"cccc"), seg(102, b"aXbbbbcY")]))
    assert joined(ev) == b"aaaabbbbcccc"
    assert conflicts(ev) == [(3, 7, 3)]


def test_a_copy_of_bytes_delivered_before_the_last_chunk_is_not_compared():
    """They are no longer held: nothing can be told, and nothing is said (the stream's docstring)."""
    ev = run(numbered([*HANDSHAKE, seg(100, b"aaaa"), seg(104, b"bbbb"), seg(100, b"aXaa")]))
    assert joined(ev) == b"aaaabbbb"
    assert conflicts(ev) == []


def test_a_conflict_found_before_a_provisional_start_moves_back_is_said_at_its_settled_offset():
    """A capture joined mid-connection: offset 0 is the first byte seen until a segment from
    before it comes; a conflict found meanwhile follows it."""
    ev = run(numbered([seg(200, b"bbbb"), seg(200, b"bXbb"), seg(196, b"aaaa")]))
    assert joined(ev) == b"aaaabbbb"
    assert conflicts(ev) == [(5, 1, 1)]


def test_a_differing_copy_from_the_other_side_is_said_for_that_side():
    ev = run(numbered([*HANDSHAKE, seg(500, b"response", src=S, dst=C), seg(500, b"respXnse", src=S, dst=C)]))
    assert joined(ev, S) == b"response"
    conflict = next(e for e in ev if isinstance(e, StreamConflict))
    assert (conflict.direction.src_port, conflict.offset, conflict.length) == (9092, 4, 1)


@settings(max_examples=150, deadline=None)
@given(cut_stream(), st.randoms(use_true_random=False))
def test_copies_of_the_same_bytes_in_any_order_are_never_a_conflict(stream, rnd: random.Random):
    data, pieces, isn = stream
    segments = [seg(isn), *(seg(isn + 1 + off, part) for off, part in pieces)]
    segments[0] = segments[0]._replace(flags=SYN)
    copies = segments[1:] + [rnd.choice(segments[1:]) for _ in range(len(pieces))]
    rnd.shuffle(copies)
    ev = run(numbered([segments[0], *copies]))
    assert joined(ev) == data
    assert conflicts(ev) == []
