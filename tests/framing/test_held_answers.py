"""Responses held for their request: how many, for how long, and a busy connection's clocks far apart."""

from __future__ import annotations

import struct
from collections import Counter

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.codec.decoder import decoder_for
from kafka_protocol_source.framing.held_answers import HELD_FOR_NS, HeldAnswers, HeldBudget
from kafka_protocol_source.framing.model import Frame
from kafka_protocol_source.framing.sniff import RequestHeader
from tests.capture import pcapbuild as pb
from tests.framing.kafkaflow import BROKER, Conversation, metadata_v1_request, metadata_v1_response


def _write(path, segments, shift_ns: int = 0) -> str:
    packets = [
        (ns + shift_ns, pb.ether(pb.ipv4(src[0], dst[0], pb.tcp(src[1], dst[1], seq, ack, flags=flags, payload=data))))
        for ns, src, dst, seq, ack, flags, data in segments
    ]
    path.write_bytes(pb.pcap(packets, nanos=True))
    return str(path)


@pytest.mark.parametrize("behind_s", [2, 30])
def test_a_busy_connection_pairs_with_the_brokers_clock_seconds_behind(behind_s, tmp_path):
    """One file per direction from two hosts, the broker's clock seconds behind the client's, on
    a connection answering 500 requests a second: every answer comes ahead of its request, a
    thousand and more of them. Past 256 the oldest were given up: 344 of 600 exchanges came
    apart into a request_missing row and an unanswered one. Now each pairs, as in one file."""
    talk = Conversation()
    for correlation_id in range(1, 601):
        talk.request(metadata_v1_request(correlation_id))
        talk.response(metadata_v1_response(correlation_id))
    whole = list(read_capture(_write(tmp_path / "whole.pcap", talk.segments)))
    to_broker = _write(tmp_path / "in.pcap", [s for s in talk.segments if s[2] == BROKER])
    from_broker = _write(tmp_path / "out.pcap", [s for s in talk.segments if s[1] == BROKER], -behind_s * 10**9)
    together = list(read_capture([to_broker, from_broker]))
    assert Counter(e.status for e in whole) == Counter(e.status for e in together) == {"ok": 600}
    assert [(e.correlation_id, e.request_span, e.response_span) for e in together] == [
        (e.correlation_id, e.request_span, e.response_span) for e in whole
    ]
    assert all(e.latency_ms is None and "before its request" in e.note for e in together)


def _response(correlation_id: int, ns: int, size: int = 16) -> Frame:
    payload = struct.pack(">i", correlation_id) + bytes(size - 4)
    return Frame(payload, correlation_id * size, ns, ns, correlation_id, correlation_id)


def _held(budget: HeldBudget | None = None, **bounds) -> HeldAnswers:
    return HeldAnswers(decoder_for(None), budget or HeldBudget(), **bounds)


def test_held_answers_are_let_go_oldest_first_past_their_bytes():
    held = _held(max_bytes=40)
    assert held.hold(1, _response(1, 0)) == []
    assert held.hold(2, _response(2, 0)) == []
    assert [_id(f) for f in held.hold(3, _response(3, 0))] == [1]
    assert held.bytes == 32 and 2 in held and 1 not in held


def test_a_held_answer_is_let_go_once_answers_a_minute_later_come():
    """A connection whose client side was not captured: its responses' rows come a minute late,
    not at its end, and hold no more than a minute of its answers."""
    held = _held()
    for i in range(1, 4):
        assert held.hold(i, _response(i, i * 10**9)) == []
    assert [_id(f) for f in held.hold(4, _response(4, HELD_FOR_NS + 2 * 10**9 + 1))] == [1, 2]
    assert [_id(f) for f in held.frames()] == [3, 4]


def test_the_connections_of_a_read_hold_no_more_than_their_budget_together():
    """Only the broker's side of many connections captured: each holds its responses for a
    minute, and all of them together no more than the read's budget."""
    budget = HeldBudget(max_bytes=64)
    first, second = _held(budget), _held(budget)
    assert first.hold(1, _response(1, 0)) == first.hold(2, _response(2, 0)) == []
    assert second.hold(3, _response(3, 0)) == second.hold(4, _response(4, 0)) == []
    assert [_id(f) for f in second.hold(5, _response(5, 0))] == [3]
    assert budget.bytes == 64
    first.answer(None, _header(1))
    assert budget.bytes == 48 and second.hold(6, _response(6, 0)) == []


def test_one_answer_however_large_is_held():
    held = _held(max_bytes=8)
    assert held.hold(1, _response(1, 0, size=64)) == []
    assert [_id(f) for f in held.hold(2, _response(2, 0))] == [1]


def _header(correlation_id: int) -> RequestHeader:
    return RequestHeader(0, 3, 1, correlation_id, None, 8)


def _id(frame: Frame) -> int:
    return struct.unpack_from(">i", frame.payload)[0]
