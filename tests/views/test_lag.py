"""The lag view: on the sample captures against the offsets the sample producers were given
(NAME.produced.json), and on scripted Fetches for fetch sessions, late topic names and followers."""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import replace

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.views.lag import LAG_COLUMNS, lag_rows
from kafka_protocol_source.views.topic_names import ZERO_UUID, TopicNames
from tests.cuts import late_start, segments_of
from tests.samples.catalog import exchanges, sample, sample_names

from .groups_script import GroupScript

CONSUMER_SAMPLES = [
    n for n in sample_names() if not n.startswith("tcpflow_") and n != "tansu_kafka_python_legacy_magic1_rejected"
]


@functools.cache
def rows(name: str) -> tuple[dict, ...]:
    return tuple(lag_rows(exchanges(name)))


def acked_offsets(name: str) -> dict[tuple[str, int], list[int]]:
    acked = defaultdict(list)
    for r in sample(name).manifest["records"]:
        if r["offset"] is not None:
            acked[(r["topic"], r["partition"])].append(r["offset"])
    return acked


@pytest.mark.parametrize("name", CONSUMER_SAMPLES)
def test_the_high_watermark_is_one_past_the_last_offset_the_producers_were_given(name):
    by_partition = defaultdict(list)
    for r in rows(name):
        by_partition[(r["topic"], r["partition"])].append(r)
    acked = acked_offsets(name)
    assert set(acked) <= set(by_partition)
    for key, fetches in by_partition.items():
        offsets = acked.get(key, [])
        assert sorted(offsets) == list(range(len(offsets)))  # the log starts at 0 and has no holes
        assert {r["high_watermark"] for r in fetches} == {len(offsets)}
        assert all(r["log_start_offset"] in (None, 0) and r["error_code"] == 0 for r in fetches)


@pytest.mark.parametrize("name", CONSUMER_SAMPLES)
def test_no_error_is_a_null_error_name_as_in_the_records_view(name):
    assert {(r["error_code"], r["error_name"]) for r in rows(name)} == {(0, None)}


@pytest.mark.parametrize("name", CONSUMER_SAMPLES)
def test_the_consumer_starts_at_the_earliest_offset_and_catches_up(name):
    acked = acked_offsets(name)
    for key, offsets in acked.items():
        fetches = sorted(
            (r for r in rows(name) if (r["topic"], r["partition"]) == key), key=lambda r: r["request_time"]
        )
        assert (fetches[0]["fetch_offset"], fetches[0]["lag"]) == (0, len(offsets))  # auto_offset_reset=earliest
        assert (fetches[-1]["fetch_offset"], fetches[-1]["lag"]) == (len(offsets), 0)
        assert sum(r["records"] for r in fetches) >= len(offsets)
        assert all(r["client_id"] == "kw-consumer" and r["replica_id"] == -1 for r in fetches)


@pytest.mark.parametrize("name", ["tansu_confluent_kafka_all_codecs", "mock_confluent_kafka_all_codecs_any_sll2"])
def test_topic_ids_of_fetch_v13_and_later_are_named_from_metadata(name):
    topic = sample(name).manifest["records"][0]["topic"]
    assert {(r["api_version"], r["topic"]) for r in rows(name)} == {(16, topic)}
    assert all(r["topic_id"] for r in rows(name))


def test_no_fetch_no_rows():
    assert rows("tansu_kafka_python_legacy_magic1_rejected") == ()
    assert rows("tcpflow_tansu_confluent_kafka_all_codecs") == ()


# -- scripted Fetches -----------------------------------------------------------------


def fetch(
    g: GroupScript,
    topics: dict,
    answers: dict,
    *,
    session=(0, -1),
    answer_session=0,
    version=12,
    forgotten=None,
    replica_state=None,
    by_id=False,
):
    """topics: {topic: {partition: fetch_offset}}; answers: {topic: {partition: (hwm, records)}}."""
    key = "topic_id" if by_id else "topic"
    request = {
        "session_id": session[0],
        "session_epoch": session[1],
        "isolation_level": 0,
        "topics": [
            {key: t, "partitions": [{"partition": p, "fetch_offset": o} for p, o in parts.items()]}
            for t, parts in topics.items()
        ],
        "forgotten_topics_data": [{key: t, "partitions": ps} for t, ps in (forgotten or {}).items()],
    }
    if replica_state is None:
        request["replica_id"] = -1
    else:
        request["replica_state"] = {"replica_id": replica_state, "replica_epoch": 3}
    response = {
        "error_code": 0,
        "session_id": answer_session,
        "responses": [
            {
                key: t,
                "partitions": [
                    {
                        "partition_index": p,
                        "error_code": 0,
                        "high_watermark": hwm,
                        "last_stable_offset": hwm,
                        "log_start_offset": 0,
                        "records": [{"records": [{}] * n}] if n else [],
                    }
                    for p, (hwm, n) in parts.items()
                ],
            }
            for t, parts in answers.items()
        ],
    }
    ex = g._add("A", 3, request, response)  # any key: the api is set just below
    g.exchanges[-1] = replace(ex, api_key=1, api_name="Fetch", api_version=version)
    return g.exchanges[-1]


def test_records_counts_whole_batches_only_as_the_consumer_does():
    """A broker cuts a Fetch response's last batch at the size limit; the consumer reads none of
    it (it fetches it again), so its records are not counted as returned."""
    g = GroupScript()
    ex = fetch(g, {"t": {0: 10}}, {"t": {0: (40, 3)}})
    batches = ex.response["responses"][0]["partitions"][0]["records"]
    batches.append({"records": [{}] * 2, "truncated": True})
    (row,) = lag_rows(g.exchanges)
    assert row["records"] == 3


def test_an_incremental_fetch_keeps_the_offsets_its_session_asked_for():
    g = GroupScript()
    fetch(g, {"t": {0: 0, 1: 0}}, {"t": {0: (10, 10), 1: (0, 0)}}, answer_session=77)
    fetch(g, {"t": {0: 10}}, {"t": {1: (5, 0)}}, session=(77, 1), answer_session=77)  # p1 unchanged: not listed
    fetch(g, {}, {"t": {1: (6, 0)}}, session=(77, 2), answer_session=77, forgotten={"t": [1]})
    first, second, third, fourth = lag_rows(g.exchanges)
    assert [
        (r["partition"], r["fetch_offset"], r["high_watermark"], r["lag"], r["records"]) for r in (first, second)
    ] == [(0, 0, 10, 10, 10), (1, 0, 0, 0, 0)]
    assert (third["partition"], third["fetch_offset"], third["lag"], third["incremental"]) == (1, 0, 5, True)
    assert (fourth["partition"], fourth["fetch_offset"], fourth["lag"]) == (1, None, None)  # forgotten by the session
    assert list(first) == list(LAG_COLUMNS)


def test_a_topic_id_named_only_later_in_the_capture_is_named_in_the_end():
    g = GroupScript()
    fetch(g, {"id-1": {0: 4}}, {"id-1": {0: (9, 5)}}, version=13, by_id=True)
    fetch(g, {"id-2": {0: 0}}, {"id-2": {0: (1, 1)}}, version=13, by_id=True)
    g.metadata({"id-1": "payments"})
    named, unnamed = sorted(lag_rows(g.exchanges), key=lambda r: r["topic_id"])
    assert (named["topic"], named["topic_id"], named["lag"]) == ("payments", "id-1", 5)
    assert (unnamed["topic"], unnamed["topic_id"]) == (None, "id-2")


def test_a_topic_id_named_only_by_others_connections_is_looked_ahead_for():
    """A reader of some connections (a slice of a split read) asks a read of every connection."""
    g = GroupScript()
    fetch(g, {"id-1": {0: 4}}, {"id-1": {0: (9, 5)}}, version=13, by_id=True)
    names = TopicNames(lambda: {"id-1": "payments"}, complete=False)
    [row] = lag_rows(g.exchanges, names)
    assert (row["topic"], row["lag"]) == ("payments", 5)


def test_the_zero_topic_id_is_no_id_and_its_rows_do_not_wait_for_a_name():
    g = GroupScript()
    fetch(g, {ZERO_UUID: {0: 4}}, {ZERO_UUID: {0: (9, 5)}}, version=13, by_id=True)
    names = TopicNames(_never, complete=False)
    [row] = lag_rows(g.exchanges, names)
    assert (row["topic"], row["topic_id"], row["lag"]) == (None, None, 5)


def _never():
    raise AssertionError("no naming read for the zero id")


def test_follower_fetches_say_which_replica_asked():
    g = GroupScript()
    fetch(g, {"t": {0: 3}}, {"t": {0: (3, 0)}}, version=15, replica_state=2)
    [row] = lag_rows(g.exchanges)
    assert (row["replica_id"], row["lag"]) == (2, 0)


def test_an_unanswered_fetch_has_no_row():
    g = GroupScript()
    ex = fetch(g, {"t": {0: 3}}, {"t": {0: (3, 0)}})
    g.exchanges[-1] = replace(ex, response=None, status="unanswered")
    assert list(lag_rows(g.exchanges)) == []


def test_a_fetch_response_whose_request_was_not_captured_gives_its_offsets_and_no_lag(tmp_path):
    """The capture starts between a Fetch and its answer (the long-poll in flight at every
    consumer's capture start): the partitions' offsets then are in the answer."""
    s = sample("tansu_confluent_kafka_all_codecs")
    whole = [r for r in lag_rows(exchanges(s.name)) if r["records"]]
    first = next(
        e
        for e in read_capture(s.path, ports=[s.broker_port])
        if e.api_key == 1 and e.response_time == whole[0]["response_time"]
    )
    segments = segments_of(s.path)
    start = next(i for i, seg in enumerate(segments) if seg.packet_index > first.request_packet)
    path = late_start(segments, start).write(tmp_path / "late.pcap")
    cut = list(lag_rows(read_capture(path, ports=[s.broker_port])))
    late = [r for r in cut if r["response_time"] == first.response_time]
    assert late and all(r["fetch_offset"] is None and r["lag"] is None and r["replica_id"] is None for r in late)
    expected = [r for r in whole if r["response_time"] == first.response_time]
    # (the Metadata that names its topic is before the cut too)
    keys = ("topic_id", "partition", "high_watermark", "last_stable_offset", "log_start_offset", "records")
    assert [tuple(r[k] for k in keys) for r in late] == [tuple(r[k] for k in keys) for r in expected]


def test_fetches_the_snaplen_cut_give_the_high_watermarks_before_the_cut(tmp_path):
    """tcpdump -s 200: each Fetch response is cut in its first partition's records. Its high
    watermarks and offsets were there and read as the whole capture reads them; the records
    were not, and are null, not 0."""
    import shutil
    import subprocess

    if shutil.which("editcap") is None:
        pytest.skip("editcap (wireshark tools) not installed")
    s = sample("tansu_confluent_kafka_all_codecs")
    cut = tmp_path / "s200.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", "200", str(s.path), str(cut)], check=True)
    keys = ("connection_id", "request_time", "topic", "partition", "fetch_offset", "high_watermark", "lag")
    whole = {tuple(r[k] for k in keys): r for r in lag_rows(read_capture(s.path, ports=[s.broker_port]))}
    rows = list(lag_rows(read_capture(cut, ports=[s.broker_port])))
    assert rows and all(tuple(r[k] for k in keys) in whole for r in rows)
    assert len(rows) == len(whole)
    assert [r["records"] for r in rows if r["records"] is None] and all(
        r["records"] == whole[tuple(r[k] for k in keys)]["records"] for r in rows if r["records"] is not None
    )


def _fetch_v11_request(corr: int, session: int, epoch: int, offset: int, partitions=range(6)) -> bytes:
    import struct

    from tests.framing.kafkaflow import string

    parts = b"".join(struct.pack(">iiqqi", p, -1, offset, -1, 1 << 20) for p in partitions)
    topics = struct.pack(">i", 1) + string("t") + struct.pack(">i", len(partitions)) + parts
    body = struct.pack(">iiiibii", -1, 500, 1, 1 << 20, 0, session, epoch) + topics + struct.pack(">i", 0) + string("")
    return struct.pack(">hhi", 1, 11, corr) + string("app") + body


def _fetch_v11_response(corr: int, session: int, hwm: int, partitions=range(6)) -> bytes:
    import struct

    from tests.framing.kafkaflow import string

    parts = b"".join(struct.pack(">ihqqqiii", p, 0, hwm, hwm, 0, -1, -1, -1) for p in partitions)
    topics = struct.pack(">i", 1) + string("t") + struct.pack(">i", len(partitions)) + parts
    return struct.pack(">i", corr) + struct.pack(">ihi", 0, 0, session) + topics


def test_an_incremental_fetch_the_capture_cut_takes_no_offset_from_its_session(tmp_path):
    """A full fetch opens session 77 at offset 0; the next, incremental, asks for offset 90, and
    its second half is lost. The partitions the cut left out of it are not the session's old
    offsets (lag 100 where the consumer was 10 behind): they are not known."""
    from tests.framing.kafkaflow import Conversation

    c = Conversation()
    c.request(_fetch_v11_request(1, 0, 0, 0))
    c.response(_fetch_v11_response(1, 77, 100))
    first = len(c.segments)
    c.request(_fetch_v11_request(2, 77, 1, 90), pieces=2)
    c.response(_fetch_v11_response(2, 77, 100))
    path = tmp_path / "incremental.pcap"
    path.write_bytes(c.pcap(drop=(first + 1,)))
    rows = list(read_capture(path))
    assert rows[1].status == "gap" and rows[1].request["topics"][0]["partitions"]
    second = [r for r in lag_rows(rows) if r["request_time"] == rows[1].request_time]
    assert len(second) == 6
    assert all((r["fetch_offset"], r["lag"]) == (None, None) for r in second)
    assert {r["incremental"] for r in second} == {None}  # (the request is not whole: not said)


def test_a_cut_fetch_of_many_partitions_gives_the_partitions_before_the_cut(tmp_path):
    """An array of more than 32 elements is refused whole when its count claims more than the
    bytes left: right for a whole frame, but a cut one had none of its partitions read."""
    import struct

    from tests.framing.kafkaflow import Conversation

    partitions = range(40)
    c = Conversation()
    c.request(_fetch_v11_request(1, 0, 0, 0, partitions))
    answer = _fetch_v11_response(1, 0, 100, partitions)
    data = struct.pack(">i", len(answer)) + answer
    c.send(c.broker, data[:200])
    c.send(c.broker, data[200:])
    path = tmp_path / "many.pcap"
    path.write_bytes(c.pcap(drop=(len(c.segments) - 1,)))
    rows = list(read_capture(path))
    assert rows[0].status == "gap"
    got = [(r["partition"], r["high_watermark"], r["lag"]) for r in lag_rows(rows)]
    assert got == [(p, 100, 100) for p in range(4)]  # the four whole before the cut
