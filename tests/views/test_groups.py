"""The groups view: on the sample captures against what tshark decodes and what the sample
clients did (tools/capture_kit/sessions.py: one consumer ``kw-consumer`` in group ``TOPIC.group``,
heartbeats every second, one commit of everything read, close). Scripted multi-member groups, for
what the samples do not show, are in ``test_groups_scripted.py``."""

from __future__ import annotations

import functools
import subprocess
from datetime import timedelta

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.views.group_model import GROUP_COLUMNS
from kafka_protocol_source.views.groups import group_rows
from tests.samples.catalog import exchanges, sample, sample_names
from tests.tshark_tcp import TSHARK, _ns

PACKET_SAMPLES = [n for n in sample_names() if not n.startswith("tcpflow_")]
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, METADATA, FETCH = 11, 12, 13, 14, 3, 1
MEMBER_ID_REQUIRED = 79


@functools.cache
def rows(name: str) -> tuple[dict, ...]:
    return tuple(group_rows(exchanges(name)))


@functools.cache
def tshark_group_pdus(name: str) -> tuple[tuple, ...]:
    """(frame time ns, is request, api key, error code, generation id) of each group PDU tshark decodes."""
    s = sample(name)
    out = subprocess.run(
        [
            TSHARK,
            "-r",
            str(s.path),
            "-n",
            "-d",
            f"tcp.port=={s.broker_port},kafka",
            "-Y",
            "(kafka.request_key >= 11 && kafka.request_key <= 14)"
            " || (kafka.response_key >= 11 && kafka.response_key <= 14)",
            "-T",
            "fields",
            "-E",
            "occurrence=f",
            "-e",
            "frame.time_epoch",
            "-e",
            "kafka.request_key",
            "-e",
            "kafka.response_key",
            "-e",
            "kafka.error",
            "-e",
            "kafka.generation_id",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pdus = []
    for line in out.splitlines():
        epoch, request_key, response_key, error, generation = line.split("\t")
        pdus.append(
            (
                _ns(epoch),
                bool(request_key),
                int(request_key or response_key),
                int(error) if error else None,
                int(generation) if generation else None,
            )
        )
    return tuple(pdus)


def topic_of(name: str) -> str:
    return sample(name).manifest["records"][0]["topic"]


def consumed(name: str) -> bool:
    return any(p[2] == JOIN_GROUP for p in tshark_group_pdus(name))


def micros(t) -> int:
    return round(t.timestamp() * 1_000_000)


needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


@needs_tshark
@pytest.mark.parametrize("name", PACKET_SAMPLES)
def test_one_generation_whose_one_member_is_the_sample_s_consumer(name):
    if not consumed(name):
        assert rows(name) == ()
        return
    [row] = rows(name)
    assert list(row) == list(GROUP_COLUMNS)
    assert (row["group_id"], row["group_protocol"], row["protocol_type"]) == (
        f"{topic_of(name)}.group",
        "classic",
        "consumer",
    )
    [member] = row["members"]
    assert (member["client_id"], member["subscribed_topics"]) == ("kw-consumer", [topic_of(name)])
    assert row["leader"] == member["member_id"]


@needs_tshark
@pytest.mark.parametrize("name", [n for n in PACKET_SAMPLES if n != "tansu_kafka_python_legacy_magic1_rejected"])
def test_the_rebalance_is_the_join_and_sync_exchanges_tshark_sees(name):
    [row] = rows(name)
    pdus = tshark_group_pdus(name)
    joins = [p for p in pdus if p[2] == JOIN_GROUP and p[1]]
    join_answers = [p for p in pdus if p[2] == JOIN_GROUP and not p[1]]
    sync_answers = [p for p in pdus if p[2] == SYNC_GROUP and not p[1]]
    assert row["joins"] == len(joins)
    assert micros(row["rebalance_start"]) == joins[0][0] // 1000
    assert micros(row["rebalance_end"]) == sync_answers[-1][0] // 1000
    assert row["rebalance_ms"] == pytest.approx(
        (row["rebalance_end"] - row["rebalance_start"]) / timedelta(milliseconds=1)
    )
    assert row["rebalance_ms"] == round(row["rebalance_ms"], 3)  # whole microseconds, no float noise
    steps = [s for s in row["rebalance_steps"] if s["api_name"] == "JoinGroup"]
    decoded = [p for p in join_answers if p[3] is not None]  # tshark 4.0 reads JoinGroup up to v5
    if decoded:
        assert [s["error"] for s in steps] == [
            ("MEMBER_ID_REQUIRED" if p[3] == MEMBER_ID_REQUIRED else None) for p in decoded
        ]
        assert row["generation_id"] == decoded[-1][4]


@pytest.mark.parametrize(
    "name", ["tansu_confluent_kafka_all_codecs", "tansu_kafka_python_all_codecs_nano", "tansu_aiokafka_all_codecs"]
)
def test_tansu_asks_for_a_member_id_first_so_its_rebalances_take_two_joins(name):
    [row] = rows(name)
    assert row["rebalance_errors"] == ["MEMBER_ID_REQUIRED"] and row["joins"] == 2
    first, second = row["rebalance_steps"][:2]
    assert first["member_id"] == second["member_id"] == row["members"][0]["member_id"]  # the id it was given


@needs_tshark
@pytest.mark.parametrize("name", [n for n in PACKET_SAMPLES if n != "tansu_kafka_python_legacy_magic1_rejected"])
def test_heartbeats_and_leaving_are_what_the_client_sent(name):
    [row] = rows(name)
    pdus = tshark_group_pdus(name)
    assert row["heartbeats"] == sum(1 for p in pdus if p[2] == HEARTBEAT and p[1])
    left = [p for p in pdus if p[2] == LEAVE_GROUP and p[1]]
    if left:  # consumer.close() sends LeaveGroup ...
        assert (row["ended"], micros(row["ended_time"])) == ("member_left", left[0][0] // 1000)
        assert row["ended_member"] == row["members"][0]["member_id"] and row["members"][0]["left_time"]
    else:  # ... except aiokafka against Tansu (sample_captures/README.md)
        assert name == "tansu_aiokafka_all_codecs" and row["ended"] == "end_of_capture"


@pytest.mark.parametrize("name", [n for n in PACKET_SAMPLES if n != "tansu_kafka_python_legacy_magic1_rejected"])
def test_the_one_commit_is_of_every_record_the_producers_got_acknowledged(name):
    [row] = rows(name)
    acked = sum(1 for r in sample(name).manifest["records"] if r["offset"] is not None)
    committed = {c["partition"]: c["offset"] for c in row["committed"] if c["topic"] == topic_of(name)}
    assert row["commits"] == 1 and committed[0] == acked
    assert all(offset == 0 for partition, offset in committed.items() if partition != 0)  # nothing produced there


@pytest.mark.parametrize("name", [n for n in PACKET_SAMPLES if n != "tansu_kafka_python_legacy_magic1_rejected"])
def test_the_decoded_assignment_is_every_partition_and_what_the_consumer_then_fetched(name):
    [row] = rows(name)
    [member] = row["members"]
    [assigned] = member["assignment"]
    topic = topic_of(name)
    partitions = {
        p["partition_index"]
        for e in exchanges(name)
        if e.api_key == METADATA and e.response
        for t in e.response.get("topics") or ()
        if t.get("name") == topic
        for p in t["partitions"]
    }
    fetched = {
        p["partition"]
        for e in exchanges(name)
        if e.api_key == FETCH and e.client_id == "kw-consumer"
        for t in e.request["topics"]
        for p in t["partitions"]
    }
    assert assigned["topic"] == topic
    assert set(assigned["partitions"]) == partitions == fetched


def test_one_group_id_at_two_coordinators_is_two_groups():
    """Regression: the sample folder read as one stitched session (its files were recorded within a
    minute of each other) once made mock aiokafka's join end Tansu aiokafka's generation."""
    tansu, mock = sample("tansu_aiokafka_all_codecs"), sample("mock_aiokafka_all_codecs")
    both = read_capture([tansu.path, mock.path], ports=[tansu.broker_port, mock.broker_port])
    got = {(r["coordinator"], r["generation_id"], r["ended"]) for r in group_rows(both)}
    assert got == {
        (f"127.0.0.1:{tansu.broker_port}", 0, "end_of_capture"),
        (f"127.0.0.1:{mock.broker_port}", 2, "member_left"),
    }
