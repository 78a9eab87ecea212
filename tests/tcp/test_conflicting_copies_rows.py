"""Rows of exchanges whose bytes a retransmission repeated differently: read from the first copy,
with a note saying which bytes differed, in the row that holds them (while it is still to come)."""

import subprocess

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.capture import read_packets
from kafka_protocol_source.tcp.stats import connection_stats
from kafka_protocol_source.views.connections import read_connections
from tests.framing.kafkaflow import BROKER, CLIENT, Conversation, metadata_v1_request, metadata_v1_response, sized
from tests.tshark_tcp import TSHARK

TOPICS = ("orders", "payments")


def copy_of(c: Conversation, i: int, after: int, change=lambda b: b.replace(b"orders", b"ordXrs")) -> None:
    """A retransmitted copy of segment ``i``, its payload changed by ``change``, right after segment ``after``."""
    _, src, dst, seq, ack, flags, payload = c.segments[i]
    c.segments.insert(after + 1, (c.segments[after][0] + 100_000, src, dst, seq, ack, flags, change(payload)))


def rows(tmp_path, c: Conversation, **kw):
    path = tmp_path / "c.pcap"
    path.write_bytes(c.pcap(**kw))
    return list(read_capture(path)), path


def topics(row) -> list[str]:
    return [t["name"] for t in row.request["topics"]]


def where_orders(frame: bytes, x_at: int = 3) -> int:
    """The stream offset of the byte 'ordXrs' changes, in a request that is the stream's first frame."""
    return sized(frame).index(b"orders") + x_at


def test_a_request_retransmitted_with_different_bytes_is_read_from_the_first_copy_and_says_so(tmp_path):
    c = Conversation()
    frame = metadata_v1_request(1, TOPICS)
    c.request(frame)
    copy_of(c, 2, 2)  # (segments 0 and 1: the handshake)
    c.response(metadata_v1_response(1, TOPICS))
    (row,), _ = rows(tmp_path, c)
    assert (row.status, topics(row)) == ("ok", list(TOPICS))
    assert row.note == (
        f"a retransmitted copy (packet 4) differed from the first copy at stream byte {where_orders(frame)}"
        " of the client side: the first copy was kept"
    )


def test_an_identical_retransmission_says_nothing(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1, TOPICS), pieces=2)
    copy_of(c, 2, 3, change=lambda b: b)
    copy_of(c, 3, 4, change=lambda b: b)
    c.response(metadata_v1_response(1, TOPICS))
    (row,), _ = rows(tmp_path, c)
    assert (row.status, topics(row), row.note) == ("ok", list(TOPICS), None)


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
def test_a_differing_copy_inside_a_request_of_two_segments_is_noted_where_tshark_flags_a_conflict(tmp_path):
    """tshark, reassembling the request, flags "Conflicting data in segment overlap" on the
    frame that completes it, and reads the first copy, as we do."""
    c = Conversation()
    frame = metadata_v1_request(1, TOPICS)
    c.request(frame, pieces=2)
    copy_of(c, 2, 2, change=lambda b: b.replace(b"app", b"aXp"))  # the first piece again, before the second
    c.response(metadata_v1_response(1, TOPICS))
    (row,), path = rows(tmp_path, c)
    assert (topics(row), row.client_id) == (list(TOPICS), "app")
    assert f"at stream byte {sized(frame).index(b'app') + 1} of the client side" in row.note
    fields = ("frame.number", "tcp.segment.overlap.conflict", "kafka.topic_name")
    options = ("-o", "tcp.reassemble_out_of_order:TRUE", "-d", "tcp.port==9092,kafka", "-T", "fields")
    flagged = subprocess.run(
        [TSHARK, "-r", str(path), *options, *(arg for f in fields for arg in ("-e", f))],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    conflicts = [line.split("\t") for line in flagged if line.split("\t")[1] == "1"]
    assert [(number, names) for number, _, names in conflicts] == [("5", "orders,payments")]  # the second piece


def test_a_differing_copy_of_request_bytes_held_out_of_order_is_noted(tmp_path):
    c = Conversation()
    frame = metadata_v1_request(1, TOPICS)
    c.request(frame, pieces=2)
    c.response(metadata_v1_response(1, TOPICS))
    second = len(sized(frame)) - len(c.segments[3][6])
    change = lambda b: b.replace(b"payments", b"paymentZ")  # noqa: E731
    copy_of(c, 3, 3, change=change)
    # the second piece, its differing copy, then the first piece: the second is held until the first comes
    (row,), _ = rows(tmp_path, c, order=[0, 1, 3, 4, 2, 5])
    assert topics(row) == list(TOPICS)
    at = second + c.segments[3][6].index(b"payments") + 7
    assert f"at stream byte {at} of the client side" in row.note


def test_a_differing_copy_of_bytes_delivered_before_the_last_packet_is_not_compared(tmp_path):
    """Those bytes are no longer held (see ``tcp.stream``): the row is read from the first copy,
    and says nothing."""
    c = Conversation()
    c.request(metadata_v1_request(1, TOPICS), pieces=2)
    copy_of(c, 2, 3, change=lambda b: b.replace(b"app", b"aXp"))  # the first piece, after the second was delivered
    c.response(metadata_v1_response(1, TOPICS))
    (row,), _ = rows(tmp_path, c)
    assert (row.status, topics(row), row.client_id, row.note) == ("ok", list(TOPICS), "app", None)


def test_a_response_repeated_differently_after_its_row_went_out_is_in_no_note_but_counted(tmp_path):
    """Its row went out when it paired; the connections view counts the conflict instead."""
    c = Conversation()
    c.request(metadata_v1_request(1, TOPICS))
    c.response(metadata_v1_response(1, TOPICS))
    copy_of(c, 3, 3)
    c.request(metadata_v1_request(2))
    c.response(metadata_v1_response(2))
    out, path = rows(tmp_path, c)
    assert [(r.status, r.correlation_id, r.note) for r in out] == [("ok", 1, None), ("ok", 2, None)]
    (row,) = read_connections(path)
    assert (row["broker_retransmissions"], row["broker_conflicting_retransmissions"]) == (1, 1)
    assert (row["client_retransmissions"], row["client_conflicting_retransmissions"]) == (0, 0)


def test_the_tcp_stats_count_differing_copies_per_side_and_identical_ones_as_retransmissions_only(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1, TOPICS))
    copy_of(c, 2, 2)
    copy_of(c, 2, 3, change=lambda b: b)
    c.response(metadata_v1_response(1, TOPICS))
    _, path = rows(tmp_path, c)
    (stats,) = connection_stats(read_packets(path))
    client, broker = stats.sent_by(*CLIENT), stats.sent_by(*BROKER)
    assert (client.retransmissions, client.conflicting_retransmissions) == (2, 1)
    assert (broker.retransmissions, broker.conflicting_retransmissions) == (0, 0)


def test_a_request_still_waiting_for_its_response_gets_the_note_of_its_differing_copy(tmp_path):
    c = Conversation()
    c.request(metadata_v1_request(1, TOPICS))
    c.request(metadata_v1_request(2))
    copy_of(c, 2, 3)  # request 1 again, after request 2: released, so not compared ...
    copy_of(c, 3, 4, change=lambda b: b[:-1] + b"?")  # ... request 2 again: the last chunk
    c.response(metadata_v1_response(1, TOPICS))
    out, _ = rows(tmp_path, c)
    by_id = {r.correlation_id: r for r in out}
    assert by_id[1].note is None and by_id[1].status == "ok"
    assert by_id[2].status == "unanswered" and topics(by_id[2]) == ["orders"]
    assert "differed from the first copy at stream byte" in by_id[2].note
