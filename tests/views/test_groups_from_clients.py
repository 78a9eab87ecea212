"""The groups view on what librdkafka's consumers do against its mock cluster (rev22's captures):
commits outside any generation, and KIP-848 members giving partitions up."""

from __future__ import annotations

import pytest

from kafka_protocol_source.views.groups import group_rows

from .groups_script import GroupScript


@pytest.mark.parametrize("how", ["assigned_consumer", "exactly_once_producer"])
def test_a_group_that_only_commits_outside_any_generation_is_a_row_of_its_commits(how):
    """A consumer that assigns itself its partitions (``assign()``, Flink's source, a reset by
    kafka-consumer-groups) commits with generation -1 and no member id; so does an exactly-once
    producer whose consumer's group is not in the capture. Such a group has no generation, and it
    had no row: its commits and committed offsets were in no row of the view (found by review:
    rev22 H1, from librdkafka against its mock cluster)."""
    g = GroupScript()
    commit = g.commit if how == "assigned_consumer" else g.txn_commit
    commit("A", "", -1, {0: 7, 1: 9})
    commit("A", "", -1, {0: 8})
    [row] = group_rows(g.exchanges)
    assert (row["generation_id"], row["member_count"], row["commits"], row["ended"]) == (None, 0, 2, "end_of_capture")
    assert [(c["partition"], c["offset"]) for c in row["committed"]] == [(0, 8), (1, 9)]


def test_a_kip_848_member_giving_partitions_up_held_them_in_its_epoch():
    """A member that must give partitions up to a new one stays at its epoch and is answered
    with what it keeps; it moves to the next epoch once it has let them go. Its epoch's row
    showed only what it kept, as if the partitions it gave up had no owner in that epoch; and an
    answer at epoch 0 (librdkafka's mock, to a member's first heartbeat) was an epoch of its own
    (found by review: rev22 M1)."""
    g = GroupScript()
    g.metadata({"id-t": "t"})
    g.consumer_heartbeat("A", "a-1", 0, answer_epoch=2, assignment={"id-t": [0, 1, 2, 3]}, subscribe=["t"])
    g.consumer_heartbeat("B", "b-1", 0, answer_epoch=0, subscribe=["t"])
    g.consumer_heartbeat("A", "a-1", 2, answer_epoch=2, assignment={"id-t": [0, 1]})
    g.consumer_heartbeat("B", "b-1", 0, answer_epoch=3, assignment={"id-t": [2, 3]})
    g.consumer_heartbeat("A", "a-1", 2, answer_epoch=3)
    two, three = group_rows(g.exchanges)
    held = [{m["member_id"]: m["assignment"][0]["partitions"] for m in row["members"]} for row in (two, three)]
    assert held == [{"a-1": [0, 1, 2, 3]}, {"a-1": [0, 1], "b-1": [2, 3]}]
