"""Captures cut the way real ones are: late starts, mid-frame starts, one side missing, pieces.

Each sample capture is cut (``tests.cuts``) and read with and without ``ports``; every exchange
wholly after the cut must come back paired as it was, every captured payload byte must be in
exactly one row (``tests.accounting``), and tshark stays the floor on the cut files.
"""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter

import pytest

from kafka_protocol_source import read_capture
from tests.accounting import check_accounting
from tests.cuts import Cut, late_start, mid_segment, one_side, pieces, resegmented, segments_of
from tests.samples.catalog import TSHARK, samples

CAPTURES = [s for s in samples() if s.path.suffix in (".pcap", ".pcapng")]
CUTS_PER_SAMPLE = 3


def _key(e):
    return e.api_key, e.api_version, e.correlation_id, e.client_id, e.connection_id


def _cuts(s):
    segments = segments_of(s.path)
    rng = random.Random(s.name)
    for _ in range(CUTS_PER_SAMPLE):
        first = rng.randrange(1, len(segments) - 1)
        yield "late", late_start(segments, first)
        yield "mid", mid_segment(segments, first, rng.randrange(1, 40))


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
@pytest.mark.parametrize("ports", ["broker", None])
def test_late_and_mid_frame_starts_keep_every_exchange_after_the_cut(s, ports, tmp_path):
    options = {"ports": [s.broker_port] if ports else None}
    whole = list(read_capture(s.path, ports=[s.broker_port]))
    for n, (how, cut) in enumerate(_cuts(s)):
        path = cut.write(tmp_path / f"{how}{n}.pcap")
        after = Counter(
            _key(e)
            for e in whole
            if e.status == "ok" and e.request_packet is not None and e.request_packet > cut.origin
        )
        rows = list(read_capture(path, **options))
        got = Counter(_key(e) for e in rows if e.status == "ok")
        assert not after - got, f"{how} start at packet {cut.origin}: lost {sorted(after - got)[:5]}"
        assert check_accounting(path, **options) == []


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("mock_aiokafka_all_codecs", 242),
        ("mock_aiokafka_all_codecs", 247),
        ("mock_aiokafka_all_codecs", 253),
        ("mock_confluent_kafka_all_codecs_any_sll2", 321),
        ("mock_confluent_kafka_all_codecs_any_sll2", 324),
        ("mock_kafka_python_all_codecs", 248),
    ],
)
def test_a_late_start_inside_a_response_spanning_packets_keeps_the_next_exchange(name, first, tmp_path):
    """Payloads sent 100 bytes a packet, and the capture starting inside a response: the broker
    side was framed from the bytes held while its start was provisional before the client side's
    request was, so a false frame start inside the next response, chaining by chance to a packet
    boundary, beat the real one (which answers that request) and the whole exchange was lost
    (found by review, /tmp/rev12/repro/repro1_midstream_join_loses_fetch.py: its Fetch records
    too). Both sides now come out in capture order. Every exchange wholly after the cut is back."""
    s = next(s for s in CAPTURES if s.name == name)
    segments = resegmented(segments_of(s.path), 100)
    whole = list(read_capture(Cut(tuple(segments)).write(tmp_path / "whole.pcap"), ports=[s.broker_port]))
    after = Counter(_key(e) for e in whole if e.status == "ok" and e.request_packet > first)
    path = Cut(tuple(segments[first:])).write(tmp_path / "late.pcap")
    got = Counter(_key(e) for e in read_capture(path, ports=[s.broker_port]) if e.status == "ok")
    assert not after - got
    assert check_accounting(path, ports=[s.broker_port]) == []


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_a_capture_cut_into_five_pieces_reads_and_accounts_for_every_piece(s, tmp_path):
    total = 0
    for n, piece in enumerate(pieces(segments_of(s.path), 5)):
        path = piece.write(tmp_path / f"piece{n}.pcap")
        for ports in ([s.broker_port], None):
            rows = list(read_capture(path, ports=ports))
            assert check_accounting(path, ports=ports) == []
        total += sum(e.status == "ok" for e in rows)
    assert total > 0


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_one_side_missing_neither_crashes_nor_loses_bytes(s, tmp_path):
    segments = segments_of(s.path)
    clients = {seg.src_port for seg in segments if seg.dst_port == s.broker_port}
    for keep, name in ((s.broker_port, "broker_only"), (min(clients), "one_client_only")):
        path = one_side(segments, keep).write(tmp_path / f"{name}.pcap")
        for ports in ([s.broker_port], None):
            rows = list(read_capture(path, ports=ports))
            assert rows and all(e.status != "internal_error" for e in rows)
            assert check_accounting(path, ports=ports) == []
        if name == "broker_only":  # found by its responses alone, without ports, from two of them
            with_ports = list(read_capture(path, ports=[s.broker_port]))
            responses = Counter(e.connection_id for e in with_ports if e.status != "gap")
            # (the gap rows: the client's bytes its FIN says it sent, which this capture lacks)
            found = Counter(e.connection_id for e in with_ports if responses[e.connection_id] >= 2)
            assert Counter(e.connection_id for e in rows) == found


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_responses_whose_requests_were_lost_are_read_at_their_connections_versions(s, tmp_path):
    """Every second request of each api on each connection is lost (its packet's payload cut out,
    as a capture that starts while it is in flight has none of it). Each of their responses is
    read at the api and version the connection's other requests use, exactly as the whole capture
    reads it, or is left raw with a note that says why; never read as something it is not. A
    Fetch response that carries records is always read: every record in it is back."""
    whole = [e for e in read_capture(s.path, ports=[s.broker_port]) if e.status == "ok" and e.response is not None]
    nth: Counter = Counter()
    lost = {}
    for e in whole:
        if nth[e.connection_id, e.api_key] % 2:
            lost[e.connection_id, e.correlation_id] = e
        nth[e.connection_id, e.api_key] += 1
    packets = {e.request_packet for e in lost.values()}
    segments = segments_of(s.path)
    cut = Cut(tuple(g._replace(payload=b"", missing=0) if g.packet_index in packets else g for g in segments))
    path = cut.write(tmp_path / "lost.pcap")
    rows = list(read_capture(path, ports=[s.broker_port]))
    missing = {(e.connection_id, e.correlation_id): e for e in rows if e.status == "request_missing"}
    assert set(missing) == set(lost)
    for key, e in missing.items():
        was = lost[key]
        if e.response is None:
            assert e.api_key is None and e.raw_response and "request not captured" in e.note, e
        else:
            assert (e.api_key, e.api_version, e.response) == (was.api_key, was.api_version, was.response)
            assert e.raw_response is None and e.client_id == was.client_id
        if was.api_name == "Fetch" and _records_in(was.response):
            assert e.response is not None, e
    assert any(e.response is not None for e in missing.values()) or not lost
    assert check_accounting(path, ports=[s.broker_port]) == []
    # A read for Fetch alone (as the records view reads) has them too: its filter sees their api.
    fetched = [e for e in read_capture(path, ports=[s.broker_port], apis=[1]) if e.status == "request_missing"]
    assert sorted(e.correlation_id for e in fetched) == sorted(
        e.correlation_id for e in missing.values() if e.api_name == "Fetch"
    )


def _records_in(fetch_response: dict) -> int:
    return sum(
        len(batch["records"])
        for topic in fetch_response.get("responses") or ()
        for part in topic.get("partitions") or ()
        for batch in part.get("records") or ()
    )


def _tshark_requests(path, port: int) -> Counter:
    cmd = [
        TSHARK,
        "-r",
        str(path),
        "-n",
        "-d",
        f"tcp.port=={port},kafka",
        "-Y",
        "kafka.request_key",
        "-T",
        "json",
        "--no-duplicate-keys",
        "-j",
        "kafka",
    ]
    found = Counter()
    for packet in json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout or "[]"):
        layers = packet["_source"]["layers"]["kafka"]
        for k in layers if isinstance(layers, list) else [layers]:
            if "kafka.request_key" in k and "kafka.correlation_id" in k:
                client_id = k.get("kafka.client_id")
                found[
                    (
                        int(k["kafka.request_key"]),
                        int(k["kafka.request.version"]),
                        int(k["kafka.correlation_id"]),
                        client_id[0] if isinstance(client_id, list) else client_id,
                    )
                ] += 1
    return found


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_tshark_is_the_floor_on_late_starts(s, tmp_path):
    for n, (how, cut) in enumerate(_cuts(s)):
        path = cut.write(tmp_path / f"{how}{n}.pcap")
        theirs = _tshark_requests(path, s.broker_port)
        for ports in ([s.broker_port], None):
            ours = Counter(
                (e.api_key, e.api_version, e.correlation_id, e.client_id)
                for e in read_capture(path, ports=ports)
                if e.api_key is not None and e.request_size
            )
            assert not theirs - ours, f"{how} start at packet {cut.origin}, ports={ports}: {sorted(theirs - ours)[:5]}"


def test_the_accounting_check_sees_a_row_dropped_or_doubled(monkeypatch):
    import tests.accounting as accounting

    s = CAPTURES[0]
    rows = list(read_capture(s.path, ports=[s.broker_port]))
    first_ok = next(i for i, e in enumerate(rows) if e.status == "ok")
    monkeypatch.setattr(accounting, "read_capture", lambda *a, **k: rows[:first_ok] + rows[first_ok + 1 :])
    assert any("rows hold" in v for v in accounting.check_accounting(s.path, ports=[s.broker_port]))
    monkeypatch.setattr(accounting, "read_capture", lambda *a, **k: [*rows, rows[first_ok]])
    assert any("twice" in v for v in accounting.check_accounting(s.path, ports=[s.broker_port]))


def test_a_file_of_a_session_that_vanished_is_a_capture_error_row_and_the_rest_is_read(tmp_path):
    s = CAPTURES[0]
    parts = [p.write(tmp_path / f"k{i}.pcap") for i, p in enumerate(pieces(segments_of(s.path), 3))]
    rows = list(read_capture([parts[0], tmp_path / "gone.pcap", parts[2]], ports=[s.broker_port]))
    errors = [e for e in rows if e.status == "capture_error"]
    assert len(errors) == 1 and "gone.pcap" in errors[0].error and errors[0].capture_file.endswith("gone.pcap")
    assert sum(e.status == "ok" for e in rows) > 0


def test_files_of_a_list_that_are_not_captures_are_rows_of_their_own_and_the_captures_are_read(tmp_path):
    """The first file of a list used to decide for all: an empty or text file first gave one
    capture_error row and none of the captures after it."""
    s = CAPTURES[0]
    parts = [p.write(tmp_path / f"k{i}.pcap") for i, p in enumerate(pieces(segments_of(s.path), 3))]
    (tmp_path / "empty.pcap").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("not a capture")
    whole = Counter((*_key(e), e.status) for e in read_capture(parts, ports=[s.broker_port]))
    rows = list(
        read_capture([tmp_path / "empty.pcap", parts[0], tmp_path / "notes.txt", *parts[1:]], ports=[s.broker_port])
    )
    errors = sorted(e.capture_file for e in rows if e.status == "capture_error")
    assert errors == [str(tmp_path / "empty.pcap"), str(tmp_path / "notes.txt")]
    assert Counter((*_key(e), e.status) for e in rows if e.status != "capture_error") == whole


def _two_interfaces(segments, order: str) -> bytes:
    """The segments captured on an Ethernet interface and again on a cooked (SLL2) one, 3 us
    later: in time order, or one interface's packets after the other's (as a two-interface
    pcapng can be written)."""
    from tests.capture import pcapbuild as pb

    first, second = [], []
    for s in segments:
        tcp = pb.tcp(s.src_port, s.dst_port, s.seq, s.ack, s.flags, s.payload)
        ip = pb.ipv4(s.src_ip, s.dst_ip, tcp)
        first.append(("epb", 0, s.timestamp_ns // 1000, pb.ether(ip)))
        second.append(("epb", 1, s.timestamp_ns // 1000 + 3, pb.sll2(ip)))
    if order == "interleaved":
        packets = [p for pair in zip(first, second, strict=True) for p in pair]
    else:
        packets = first + second
    return pb.pcapng([(1, None, None, 262144), (276, None, None, 262144)], packets)


@pytest.mark.parametrize("order", ["interleaved", "one_interface_after_the_other"])
@pytest.mark.parametrize("ports", ["broker", None])
def test_the_same_packets_on_two_interfaces_are_read_once(tmp_path, order, ports):
    s = next(c for c in CAPTURES if c.name == "tansu_confluent_kafka_all_codecs")
    options = {"ports": [s.broker_port] if ports else None}
    path = tmp_path / "two.pcapng"
    path.write_bytes(_two_interfaces(segments_of(s.path), order))
    once = Counter((*_key(e), e.status) for e in read_capture(s.path, **options))
    twice = Counter((*_key(e), e.status) for e in read_capture(path, **options))
    assert twice == once
    assert check_accounting(path, **options) == []


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_with_only_the_brokers_side_responses_are_read_as_the_whole_capture_reads_them(s, tmp_path):
    """No request captured at all: a response is read only where one api's layouts read it and
    no other api's do, at the version the connection's own responses show when they show one;
    it is then the api, version and body the whole capture (which has the requests) reads. The
    rest stay raw, with a note. Fetched records are all back, but where a topic's name is 15
    characters long (1 + 15 bytes: a topic id's size, so Fetch v12 reads as v13+ too)."""
    whole = {(e.connection_id, e.correlation_id): e for e in read_capture(s.path, ports=[s.broker_port]) if e.response}
    path = one_side(segments_of(s.path), s.broker_port).write(tmp_path / "broker_only.pcap")
    rows = [e for e in read_capture(path, ports=[s.broker_port]) if e.status == "request_missing"]
    assert rows
    for e in rows:
        was = whole[e.connection_id, e.correlation_id]
        if e.response is None:
            assert e.api_key is None and e.raw_response and "nor any of this connection's" in e.note, e
            continue
        assert e.api_key == was.api_key and e.api_version in (was.api_version, None), e
        if e.api_version is not None and was.api_name not in ("JoinGroup", "SyncGroup"):
            assert e.response == was.response  # (the group apis' member data needs the request's protocol type)
        else:
            assert _records_in(e.response) == _records_in(was.response)
    fetched = [e for e in rows if e.api_name == "Fetch"]
    topics = {t for e in whole.values() if e.api_name == "Fetch" for t in _topics(e.response)}
    if not any(len(t.encode()) == 15 for t in topics):
        assert sum(_records_in(e.response) for e in fetched) == sum(
            _records_in(e.response) for e in whole.values() if e.api_name == "Fetch"
        )
    assert check_accounting(path, ports=[s.broker_port]) == []


def test_a_fetch_v12_whose_topic_name_is_as_long_as_a_topic_id_stays_raw(tmp_path):
    """kafka-python's Fetch v12 answers name the topic "kw.kafka_python": a compact string of 16
    bytes, which Fetch v13-18 read as a topic id. Without the request nothing tells the two
    apart, so the body is kept raw, not read with a made-up id in place of the name."""
    s = next(s for s in CAPTURES if s.name == "tansu_kafka_python_all_codecs_nano")
    path = one_side(segments_of(s.path), s.broker_port).write(tmp_path / "broker_only.pcap")
    whole = {_exchange(e): e for e in read_capture(s.path, ports=[s.broker_port]) if e.api_name == "Fetch"}
    assert {(e.api_version, t) for e in whole.values() for t in _topics(e.response)} == {(12, "kw.kafka_python")}
    rows = [e for e in read_capture(path, ports=[s.broker_port]) if _exchange(e) in whole]
    assert rows and all(e.response is None and "Fetch v12-18 only, but not alike" in e.note for e in rows)


def _exchange(e) -> tuple:
    return e.connection_id, e.correlation_id


def _topics(fetch_response: dict) -> set[str]:
    return {topic["topic"] for topic in fetch_response.get("responses") or () if topic.get("topic")}


def test_a_start_inside_a_produce_request_is_not_taken_at_the_records_inside_it(tmp_path):
    """Joined one byte into a Produce request (v3-v8) whose records end it: the records field's
    size and the batch's zero base offset read as a frame header (Produce v0, correlation id 0),
    and that frame ends where the request does, on a packet boundary. Its body does not read, so
    no frame starts there: the bytes are one gap, and the Produce response is read without its
    request (it was a malformed 'Produce v0' and the response was left unread)."""
    s = next(s for s in samples() if s.name == "mock_kafka_python_all_codecs")
    segments = segments_of(s.path)
    path = mid_segment(segments, len(segments) // 10, 1).write(tmp_path / "mid.pcap")
    rows = [e for e in read_capture(path, ports=[s.broker_port]) if e.status != "ok"]
    assert [(e.status, e.api_name, e.correlation_id) for e in rows] == [
        ("gap", None, None),
        ("request_missing", "Produce", 4),
    ]
    assert "joined this connection mid-stream" in rows[0].error
    assert check_accounting(path, ports=[s.broker_port]) == []


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_without_ports_a_late_start_never_takes_the_brokers_responses_for_requests(s, tmp_path):
    """On an unconfigured port, a capture that starts after a client's last request holds only
    its broker's answers: a response header reads as a request's (a correlation id of 13 is api
    key 0, version 13), and its body can read as a request with bytes left over. Only a request
    that reads exactly tells the client side, so no Produce that never happened comes out."""
    segments = segments_of(s.path)
    fake = []
    for first in range(1, len(segments), 4):
        path = late_start(segments, first).write(tmp_path / "late.pcap")
        fake += [
            (first, e.api_name, e.status)
            for e in read_capture(path)
            if e.client_address and e.client_address.endswith(f":{s.broker_port}")
        ]
    assert fake == []


@pytest.mark.parametrize(
    ("name", "fortieth", "client_port"),
    [
        ("tansu_confluent_kafka_all_codecs", 5, 46764),
        ("tansu_kafka_python_all_codecs_nano", 4, 35788),
        ("mock_kafka_python_legacy_magic0", 4, 59200),
    ],
)
def test_a_connection_showing_one_answer_is_kafka_where_other_connections_found_its_broker(
    name, fortieth, client_port, tmp_path
):
    """A capture started after the last request of a short connection shows one answer on it:
    too little to tell Kafka by, but the broker's address and port were found serving Kafka on
    other connections, and a listener speaks one protocol. Without ``ports`` the connection gives
    the rows it gives with them."""
    s = next(s for s in CAPTURES if s.name == name)
    segments = segments_of(s.path)
    path = late_start(segments, len(segments) * fortieth // 40).write(tmp_path / "late.pcap")

    def rows(**options):
        return [
            (e.connection_id, e.status, e.api_key, e.correlation_id, e.note)
            for e in read_capture(path, **options)
            if e.client_address and e.client_address.endswith(f":{client_port}")
        ]

    with_ports = rows(ports=[s.broker_port])
    assert [status for _, status, *_ in with_ports] == ["request_missing"]
    assert rows() == with_ports
    assert check_accounting(path) == []
