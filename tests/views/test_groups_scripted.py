"""The groups view on scripted multi-member groups: what the sample captures do not show (new
members, rebalances that fail or begin before the capture, fencing, KIP-848, cut commits)."""

from __future__ import annotations

import pytest

from kafka_protocol_source.views.groups import group_rows

from .groups_script import GroupScript

MEMBER_ID_REQUIRED = 79


def test_a_second_member_ends_the_first_generation_and_both_are_in_the_next():
    g = GroupScript()
    g.join("A", error=MEMBER_ID_REQUIRED, assigned_id="a-1")
    g.join("A", member_id="a-1", generation=1, leader="a-1", members=["a-1"], wait_s=3)
    g.sync("A", "a-1", 1, assignments={"a-1": [0, 1]}, mine=[0, 1])
    g.heartbeat("A", "a-1", 1)
    g.commit("A", "a-1", 1, {0: 10, 1: 20})
    b_join = g.join("B", error=MEMBER_ID_REQUIRED, assigned_id="b-1")
    g.heartbeat("A", "a-1", 1, error=27)  # REBALANCE_IN_PROGRESS
    g.join("A", member_id="a-1", generation=2, leader="a-1", members=["a-1", "b-1"], wait_s=1)
    g.join("B", member_id="b-1", generation=2, leader="a-1")
    g.sync("A", "a-1", 2, assignments={"a-1": [0], "b-1": [1]}, mine=[0])
    last_sync = g.sync("B", "b-1", 2, mine=[1])
    leave = g.leave("B", "b-1")
    first, second = group_rows(g.exchanges)
    assert (first["generation_id"], first["joins"], first["rebalance_errors"]) == (1, 2, ["MEMBER_ID_REQUIRED"])
    assert (first["ended"], first["ended_member"], first["ended_time"]) == ("member_joined", "b-1", b_join.request_time)
    assert first["heartbeats"] == 2 and first["heartbeat_errors"] == ["REBALANCE_IN_PROGRESS"]
    assert first["committed"] == [
        {"topic": "t", "partition": 0, "offset": 10},
        {"topic": "t", "partition": 1, "offset": 20},
    ]
    assert (second["generation_id"], second["member_count"], second["leader"]) == (2, 2, "a-1")
    assert {m["member_id"]: (m["client_id"], m["assignment"][0]["partitions"]) for m in second["members"]} == {
        "a-1": ("app-a", [0]),
        "b-1": ("app-b", [1]),
    }
    assert second["rebalance_start"] == b_join.request_time and second["rebalance_end"] == last_sync.response_time
    assert second["joins"] == 3 and [s["api_name"] for s in second["rebalance_steps"]].count("SyncGroup") == 2
    assert (second["ended"], second["ended_member"], second["ended_time"]) == ("member_left", "b-1", leave.request_time)


def test_a_rebalance_whose_first_join_the_capture_missed_says_its_length_is_a_lower_bound():
    """The capture starts after B joined and started the rebalance: the leader's answer names
    b-1, whose JoinGroup is not in the capture. ``rebalance_ms`` runs from A's join, later than the
    rebalance began, and says so; the same rebalance captured whole, from the generation before
    it, does not."""
    whole = GroupScript()
    whole.join("A", member_id="a-1", generation=4, leader="a-1", members=["a-1"])
    whole.sync("A", "a-1", 4, assignments={"a-1": [0, 1]}, mine=[0, 1])
    whole.join("B", member_id="b-1", generation=5, leader="a-1", wait_s=2)
    whole.join("A", member_id="a-1", generation=5, leader="a-1", members=["a-1", "b-1"], wait_s=1)
    whole.sync("A", "a-1", 5, assignments={"a-1": [0], "b-1": [1]}, mine=[0])
    whole.sync("B", "b-1", 5, mine=[1])
    before, row = group_rows(whole.exchanges)
    assert row["rebalance_start_captured"] is True
    assert before["rebalance_start_captured"] is False  # a known member's join, the first here
    [late] = group_rows(whole.exchanges[3:])
    assert late["rebalance_start_captured"] is False
    assert 0 < late["rebalance_ms"] < row["rebalance_ms"]


@pytest.mark.parametrize("cut", [0, 1])
def test_a_new_members_first_join_is_where_its_rebalance_starts(cut):
    """A new member joins without an id and is answered MEMBER_ID_REQUIRED: that begins the
    rebalance. A capture that missed it holds the join with the new id, later."""
    g = GroupScript()
    g.join("A", error=MEMBER_ID_REQUIRED, assigned_id="a-1")
    g.join("A", member_id="a-1", generation=1, leader="a-1", members=["a-1"], wait_s=1)
    g.sync("A", "a-1", 1, assignments={"a-1": [0]}, mine=[0])
    [row] = group_rows(g.exchanges[cut:])
    assert row["rebalance_start_captured"] is (cut == 0)


def test_a_capture_that_starts_mid_generation_still_has_that_generation():
    g = GroupScript()
    g.heartbeat("A", "a-1", 7)
    g.heartbeat("A", "a-1", 7, error=25)  # UNKNOWN_MEMBER_ID: its session expired
    [row] = group_rows(g.exchanges)
    assert (row["generation_id"], row["rebalance_start"], row["rebalance_end"], row["joins"]) == (7, None, None, 0)
    assert row["rebalance_start_captured"] is None
    assert [m["member_id"] for m in row["members"]] == ["a-1"]
    assert (row["ended"], row["ended_member"]) == ("member_fenced", "a-1")


def test_a_rejoin_of_a_known_member_ends_its_generation_as_such():
    g = GroupScript()
    g.join("A", member_id="a-1", generation=3, leader="a-1", members=["a-1"])
    g.sync("A", "a-1", 3, assignments={"a-1": [0]}, mine=[0])
    g.join("A", member_id="a-1", generation=4, leader="a-1", members=["a-1"])
    first, second = group_rows(g.exchanges)
    assert (first["ended"], first["ended_member"]) == ("member_rejoined", "a-1")
    assert second["ended"] == "end_of_capture" and second["rebalance_end"] is None  # never synced


def test_kip_848_epochs_with_assignments_named_from_metadata():
    g = GroupScript()
    g.metadata({"id-t": "t"})
    g.consumer_heartbeat("A", "a-1", 0, answer_epoch=1, assignment={"id-t": [1, 0]}, subscribe=["t"])
    g.consumer_heartbeat("A", "a-1", 1, answer_epoch=1)
    b_join = g.consumer_heartbeat("B", "b-1", 0, answer_epoch=2, assignment={"id-t": [1]}, subscribe=["t"])
    g.consumer_heartbeat("A", "a-1", 1, answer_epoch=2, assignment={"id-t": [0]})
    g.commit("A", "a-1", 2, {0: 5})
    leave = g.consumer_heartbeat("B", "b-1", -1, answer_epoch=-1)
    first, second = group_rows(g.exchanges)
    assert (first["group_protocol"], first["generation_id"], first["protocol_name"]) == ("consumer", 1, "uniform")
    assert first["heartbeats"] == 1 and first["members"][0]["assignment"] == [
        {"topic": "t", "topic_id": "id-t", "partitions": [0, 1]}
    ]
    assert (first["ended"], first["ended_member"], first["ended_time"]) == ("member_joined", "b-1", b_join.request_time)
    assert second["generation_id"] == 2 and second["joins"] == 2
    assert {m["member_id"]: (m["assignment"][0]["partitions"], m["subscribed_topics"]) for m in second["members"]} == {
        "a-1": ([0], ["t"]),
        "b-1": ([1], ["t"]),
    }
    assert second["committed"] == [{"topic": "t", "partition": 0, "offset": 5}]
    assert (second["ended"], second["ended_member"], second["ended_time"]) == ("member_left", "b-1", leave.request_time)


def test_a_heartbeat_answer_without_its_epoch_is_skipped_not_a_crash():
    # A response decoded leniently (a peer that left the epoch out) carries member_epoch None;
    # comparing it with the current epoch raised TypeError and lost the whole view.
    g = GroupScript()
    g.consumer_heartbeat("A", "a-1", 0, answer_epoch=1, subscribe=["t"])
    g.consumer_heartbeat("A", "a-1", 1, answer_epoch=None)
    g.consumer_heartbeat("A", "a-1", 1, answer_epoch=1)
    [only] = group_rows(g.exchanges)
    assert (only["generation_id"], only["heartbeats"]) == (1, 1)


def test_offsets_an_exactly_once_producer_commits_in_its_transaction_are_the_groups_commits():
    """Kafka Streams and other exactly-once apps commit only with TxnOffsetCommit (to the group
    coordinator, in the transaction): those are the group's commits too."""
    g = GroupScript()
    g.join("A", member_id="a-1", generation=1, leader="a-1", members=["a-1"])
    g.sync("A", "a-1", 1, assignments={"a-1": [0]}, mine=[0])
    g.txn_commit("A", "a-1", 1, {0: 10})
    g.txn_commit("A", "a-1", 1, {0: 12})
    [row] = group_rows(g.exchanges)
    assert row["commits"] == 2
    assert [(c["topic"], c["partition"], c["offset"]) for c in row["committed"]] == [("t", 0, 12)]


def test_a_capture_started_during_a_rebalance_ends_each_generation_by_what_happened_to_it():
    """Exchanges come in request-time order: the new member's JoinGroup, answered with generation
    2, comes before the old generation's last heartbeat. Generation 1 (first seen then) must not
    end generation 2, nor take the LeaveGroup that ends generation 2."""
    g = GroupScript()
    g.join("B", member_id="b-1", generation=2, leader="b-1", members=["a-1", "b-1"], wait_s=3)
    old = g.heartbeat("A", "a-1", 1, error=27)  # REBALANCE_IN_PROGRESS
    g.join("A", member_id="a-1", generation=2, leader="b-1", wait_s=2)
    g.sync("B", "b-1", 2, assignments={"b-1": [0], "a-1": [1]}, mine=[0])
    g.sync("A", "a-1", 2, mine=[1])
    g.heartbeat("A", "a-1", 2)
    leave = g.leave("A", "a-1")
    by_id = {r["generation_id"]: r for r in group_rows(g.exchanges)}
    assert (by_id[1]["ended"], by_id[1]["ended_time"]) == ("rebalance_in_progress", old.response_time)
    assert (by_id[2]["ended"], by_id[2]["ended_member"], by_id[2]["ended_time"]) == (
        "member_left",
        "a-1",
        leave.request_time,
    )


@pytest.mark.parametrize("status", ["unanswered", "gap"])
def test_a_step_whose_answer_was_not_read_says_why_not_that_it_succeeded(status):
    """A rebalance still waiting when the capture ends (or whose answer the capture cut): its
    join has no error code, and a null error read as "joined". The step says the exchange's status."""
    from dataclasses import replace

    g = GroupScript()
    g.join("A", member_id="a-1", generation=3, leader="a-1", members=["a-1"])
    g.sync("A", "a-1", 3, assignments={"a-1": [0]}, mine=[0])
    waiting = g.join("B", member_id="b-1")
    g.exchanges[-1] = replace(waiting, response=None, response_time=None, latency_ms=None, status=status)
    first, second = group_rows(g.exchanges)
    assert [s["error"] for s in first["rebalance_steps"]] == [None, None] and first["rebalance_errors"] == []
    assert [(s["member_id"], s["error"]) for s in second["rebalance_steps"]] == [("b-1", status)]
    assert second["rebalance_errors"] == [status] and second["generation_id"] is None


def test_a_commit_whose_answer_the_capture_cut_is_committed_only_where_the_answer_says_so(tmp_path):
    """OffsetCommit of three partitions, refused (ILLEGAL_GENERATION) for each; the answer's last
    packet is lost after partition 0. Partitions 1 and 2 were taken as committed."""
    import struct

    from kafka_protocol_source import read_capture
    from tests.framing.kafkaflow import Conversation, string

    req = (
        struct.pack(">hhi", 8, 2, 1) + string("app") + string("g") + struct.pack(">i", 7) + string("m-1")
        + struct.pack(">q", -1) + struct.pack(">i", 1) + string("t") + struct.pack(">i", 3)
        + b"".join(struct.pack(">iq", p, 500) + string("") for p in range(3))
    )  # fmt: skip
    resp = struct.pack(">ii", 1, 1) + string("t") + struct.pack(">i", 3)
    resp += b"".join(struct.pack(">ih", p, 22) for p in range(3))
    committed = {}
    for cut in (False, True):
        c = Conversation()
        c.request(req)
        data = struct.pack(">i", len(resp)) + resp
        at = 4 + 4 + 4 + 3 + 4 + 6 + 2
        c.send(c.broker, data[:at])
        c.send(c.broker, data[at:])
        path = tmp_path / f"cut{cut}.pcap"
        path.write_bytes(c.pcap(drop=(len(c.segments) - 1,) if cut else ()))
        exchanges = list(read_capture(path))
        assert exchanges[0].status == ("gap" if cut else "ok")
        [row] = group_rows(exchanges)
        committed[cut] = row["committed"]
    assert committed == {False: [], True: []}


REBALANCE_IN_PROGRESS = 27


def test_a_rebalance_that_fails_at_its_syncs_ends_there_and_the_joins_after_it_are_the_next_ones():
    """Generation 2's joins are answered, then C joins before the syncs: both SyncGroups are
    answered REBALANCE_IN_PROGRESS and everyone joins again for generation 3. C's join and the
    rejoins are generation 3's rebalance, which the capture holds from its start."""
    g = GroupScript()
    g.join("A", member_id="a-1", generation=1, leader="a-1", members=["a-1"])
    g.sync("A", "a-1", 1, assignments={"a-1": [0, 1, 2]}, mine=[0, 1, 2])
    b_join = g.join("B", member_id="b-1", generation=2, leader="a-1")
    g.join("A", member_id="a-1", generation=2, leader="a-1", members=["a-1", "b-1"])
    c_join = g.join("C", member_id="c-1", generation=3, leader="a-1", wait_s=2)
    g.sync("A", "a-1", 2, assignments={"a-1": [0, 1], "b-1": [2]}, error=REBALANCE_IN_PROGRESS)
    failed = g.sync("B", "b-1", 2, error=REBALANCE_IN_PROGRESS)
    g.join("A", member_id="a-1", generation=3, leader="a-1", members=["a-1", "b-1", "c-1"])
    g.join("B", member_id="b-1", generation=3, leader="a-1")
    g.sync("A", "a-1", 3, assignments={"a-1": [0], "b-1": [1], "c-1": [2]}, mine=[0])
    g.sync("B", "b-1", 3, mine=[1])
    last = g.sync("C", "c-1", 3, mine=[2])
    first, second, third = group_rows(g.exchanges)
    assert (first["ended"], first["ended_member"]) == ("member_joined", "b-1")
    assert second["generation_id"] == 2 and second["rebalance_start"] == b_join.request_time
    assert [(s["api_name"], s["member_id"]) for s in second["rebalance_steps"]] == [
        ("JoinGroup", "b-1"),
        ("JoinGroup", "a-1"),
        ("SyncGroup", "a-1"),
        ("SyncGroup", "b-1"),
    ]
    assert second["rebalance_errors"] == ["REBALANCE_IN_PROGRESS"] and second["rebalance_end"] is None
    assert (second["ended"], second["ended_member"]) == ("member_joined", "c-1")
    assert third["generation_id"] == 3 and third["joins"] == 3
    assert (third["rebalance_start"], third["rebalance_end"]) == (c_join.request_time, last.response_time)
    assert third["rebalance_start_captured"] is True and third["rebalance_errors"] == []
    assert third["member_count"] == 3 and failed.request_time < third["rebalance_end"]


def test_a_rebalance_that_fails_when_a_member_leaves_gives_the_rejoins_to_the_next_one():
    """B leaves while generation 2 is being synced: A's SyncGroup is answered
    REBALANCE_IN_PROGRESS, and A's rejoin begins generation 3's rebalance."""
    g = GroupScript()
    g.join("A", member_id="a-1", generation=2, leader="a-1", members=["a-1", "b-1"])
    g.join("B", member_id="b-1", generation=2, leader="a-1")
    g.leave("B", "b-1")
    g.sync("A", "a-1", 2, assignments={"a-1": [0], "b-1": [1]}, error=REBALANCE_IN_PROGRESS)
    rejoin = g.join("A", member_id="a-1", generation=3, leader="a-1", members=["a-1"])
    last = g.sync("A", "a-1", 3, assignments={"a-1": [0, 1]}, mine=[0, 1])
    second, third = group_rows(g.exchanges)
    assert second["ended"] == "member_left" and second["joins"] == 2
    assert [s["api_name"] for s in second["rebalance_steps"]] == ["JoinGroup", "JoinGroup", "SyncGroup"]
    assert (third["rebalance_start"], third["rebalance_end"]) == (rejoin.request_time, last.response_time)
    assert third["joins"] == 1 and third["rebalance_start_captured"] is True


def _unanswered(g: GroupScript) -> None:
    """The script's last exchange, its answer not in the capture."""
    from dataclasses import replace

    ex = g.exchanges[-1]
    g.exchanges[-1] = replace(
        ex, response=None, response_time=None, latency_ms=None, response_size=None, status="unanswered"
    )


@pytest.mark.parametrize("answered", [True, False])
def test_a_new_members_join_after_the_answers_begins_the_next_rebalance_whatever_its_answer(answered):
    """Found by review of 65fbed9: C joins after generation 2's joins were answered, as a modern
    client does (answered MEMBER_ID_REQUIRED first), or the capture ends before any answer. Its
    join was counted in generation 2's failed rebalance, and the next one began later than it did
    while saying its start was captured."""
    g = GroupScript()
    g.join("A", member_id="a-1", generation=1, leader="a-1", members=["a-1"])
    g.sync("A", "a-1", 1, assignments={"a-1": [0, 1, 2]}, mine=[0, 1, 2])
    g.join("B", member_id="b-1", generation=2, leader="a-1")
    g.join("A", member_id="a-1", generation=2, leader="a-1", members=["a-1", "b-1"])
    if answered:
        c_join = g.join("C", error=MEMBER_ID_REQUIRED, assigned_id="c-1")
        g.join("C", member_id="c-1", generation=3, leader="a-1", wait_s=2)
    else:
        c_join = g.join("C", member_id="c-1")
        _unanswered(g)
    g.sync("A", "a-1", 2, assignments={"a-1": [0, 1], "b-1": [2]}, error=REBALANCE_IN_PROGRESS)
    g.sync("B", "b-1", 2, error=REBALANCE_IN_PROGRESS)
    if answered:
        g.join("A", member_id="a-1", generation=3, leader="a-1", members=["a-1", "b-1", "c-1"])
        g.join("B", member_id="b-1", generation=3, leader="a-1")
        g.sync("A", "a-1", 3, assignments={"a-1": [0], "b-1": [1], "c-1": [2]}, mine=[0])
        g.sync("B", "b-1", 3, mine=[1])
        g.sync("C", "c-1", 3, mine=[2])
    _, second, third = group_rows(g.exchanges)
    assert second["generation_id"] == 2 and second["joins"] == 2
    assert (third["rebalance_start"], third["joins"]) == (c_join.request_time, 4 if answered else 1)
    assert third["generation_id"] == (3 if answered else None)
    assert third["rebalance_start_captured"] is (True if answered else None)


def test_a_sync_refused_while_the_next_rebalance_waits_for_its_joins_is_of_the_generation_before():
    """Found by review of 65fbed9: the capture starts while generation 2 waits for its syncs. C's
    first join opens the next rebalance; B's SyncGroup of generation 2, answered
    REBALANCE_IN_PROGRESS, then gave generation 2's id to that rebalance."""
    g = GroupScript()
    c_join = g.join("C", error=MEMBER_ID_REQUIRED, assigned_id="c-1")
    g.sync("B", "b-1", 2, error=REBALANCE_IN_PROGRESS)
    g.join("C", member_id="c-1", generation=3, leader="a-1", wait_s=2)
    g.sync("A", "a-1", 2, assignments={"a-1": [0, 1], "b-1": [2]}, error=REBALANCE_IN_PROGRESS)
    g.join("A", member_id="a-1", generation=3, leader="a-1", members=["a-1", "b-1", "c-1"])
    g.join("B", member_id="b-1", generation=3, leader="a-1")
    g.sync("A", "a-1", 3, assignments={"a-1": [0], "b-1": [1], "c-1": [2]}, mine=[0])
    g.sync("B", "b-1", 3, mine=[1])
    last = g.sync("C", "c-1", 3, mine=[2])
    by_id = {r["generation_id"]: r for r in group_rows(g.exchanges)}
    second, third = by_id[2], by_id[3]
    assert (len(by_id), second["joins"], second["rebalance_start"]) == (2, 0, None)
    assert [s["api_name"] for s in second["rebalance_steps"]] == ["SyncGroup", "SyncGroup"]
    assert (third["generation_id"], third["joins"]) == (3, 4)
    assert (third["rebalance_start"], third["rebalance_end"]) == (c_join.request_time, last.response_time)


def test_a_heartbeat_refused_before_the_syncs_does_not_end_a_generation_that_then_syncs():
    """Older brokers answer a heartbeat REBALANCE_IN_PROGRESS while a generation waits for its
    leader's SyncGroup (found by review of 65fbed9). The syncs then succeed: the generation goes on."""
    g = GroupScript()
    g.join("B", member_id="b-1", generation=2, leader="a-1")
    g.join("A", member_id="a-1", generation=2, leader="a-1", members=["a-1", "b-1"])
    g.heartbeat("B", "b-1", 2, error=REBALANCE_IN_PROGRESS)
    g.sync("A", "a-1", 2, assignments={"a-1": [0], "b-1": [1]}, mine=[0])
    last = g.sync("B", "b-1", 2, mine=[1])
    g.heartbeat("B", "b-1", 2)
    [row] = group_rows(g.exchanges)
    assert (row["ended"], row["rebalance_end"], row["heartbeats"]) == ("end_of_capture", last.response_time, 2)
    assert row["heartbeat_errors"] == ["REBALANCE_IN_PROGRESS"]


def test_a_static_member_that_restarts_without_a_rebalance_stays_in_its_generation():
    """KIP-345: a static member restarts and joins with no member id; the coordinator gives it a
    new id and the generation as it is, with no rebalance. Its join ended the generation as
    member_joined, and the join step was dropped (found by review of 65fbed9)."""
    g = GroupScript()
    g.join("A", member_id="a-1", generation=4, leader="a-1", members=["a-1", "b-1"])
    g.join("B", member_id="b-1", generation=4, leader="a-1")
    g.sync("A", "a-1", 4, assignments={"a-1": [0], "b-1": [1]}, mine=[0])
    g.sync("B", "b-1", 4, mine=[1])
    g.join("B", member_id="", generation=4, leader="a-1", assigned_id="b-2")
    g.sync("B", "b-2", 4, mine=[1])
    g.heartbeat("B", "b-2", 4)
    [row] = group_rows(g.exchanges)
    assert (row["generation_id"], row["ended"], row["joins"]) == (4, "end_of_capture", 3)
    assert [(s["api_name"], s["member_id"]) for s in row["rebalance_steps"]][-2:] == [
        ("JoinGroup", "b-2"),
        ("SyncGroup", "b-2"),
    ]
    assert {m["member_id"] for m in row["members"]} == {"a-1", "b-1", "b-2"}
