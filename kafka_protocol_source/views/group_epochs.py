"""KIP-848 consumer groups in the groups view: one row per group epoch, from ConsumerGroupHeartbeat.

With the consumer rebalance protocol the coordinator assigns partitions itself and every member
only heartbeats: a request says the member epoch it is at (0 to join, -1 to leave, -2 for a
static member leaving), the answer the epoch it is to move to, with its new assignment when that
changed (topic ids, named from Metadata in the same capture). A row is one epoch: the members
that moved to it (each move is one of its ``rebalance_steps``; the rebalance runs from the first
move to the last), their assignments (kept from an earlier epoch when the answer repeats none;
every partition a member held at the epoch: one it gives up while it stays at the epoch, to move
to the next, was still its own, and one freed for it later in the epoch is its own too), and why
the epoch ended: a member joined (``member_joined``), another epoch began
(``epoch_bumped``), a member left or was fenced, or the capture ended.
"""

from __future__ import annotations

from ..spec.error_codes import error_name
from .group_model import Generation, named_partitions
from .topic_names import TopicNames

CONSUMER_GROUP_HEARTBEAT = 68
JOINING, LEAVING, STATIC_LEAVING = 0, -1, -2
FENCED = {25: "UNKNOWN_MEMBER_ID", 110: "FENCED_MEMBER_EPOCH"}


class EpochTracker:
    def __init__(self, names: TopicNames):
        self.names = names
        self.epochs: dict[tuple[str, int], Generation] = {}
        self.latest: dict[str, Generation] = {}
        # keyed by (group, member id); a member id the exchange did not carry is None
        self.subscriptions: dict[tuple[str, str | None], list[str]] = {}
        self.assignments: dict[tuple[str, str | None], list[dict]] = {}

    def knows(self, group: str | None) -> bool:
        return group in self.latest

    def heartbeat(self, ex) -> None:
        req, resp = ex.request or {}, ex.response or {}
        group = req.get("group_id")
        if not group:
            return
        member_id = resp.get("member_id") or req.get("member_id")
        asked = req.get("member_epoch")
        if req.get("subscribed_topic_names") is not None:
            self.subscriptions[(group, member_id)] = list(req["subscribed_topic_names"])
        current = self.latest.get(group)
        if asked in (LEAVING, STATIC_LEAVING):
            if current is not None:
                current.seen(ex.request_time)
                current.member(member_id).left = ex.request_time
                current.end("member_left", ex.request_time, member_id)
            return
        code = resp.get("error_code") if ex.response is not None else None
        if code is None:
            return
        if code:
            if current is not None:
                current.heartbeat_errors.append(error_name(code))
                if code in FENCED:
                    current.end("member_fenced", ex.response_time, member_id)
            return
        epoch = resp.get("member_epoch")
        if epoch is None or epoch <= JOINING:  # decoded leniently without it, or not in an epoch yet
            return
        generation = self._epoch(group, epoch, ex, asked, member_id, current)
        member = generation.member(member_id)
        member.seen_in(ex)
        member.instance_id = req.get("instance_id") or member.instance_id
        member.subscribed_topics = self.subscriptions.get((group, member_id))
        if resp.get("assignment") is not None:
            self.assignments[(group, member_id)] = named_partitions(
                resp["assignment"].get("topic_partitions"), "topic_id", self.names
            )
        member.assignment = _held(member.assignment, self.assignments.get((group, member_id)))
        generation.protocol_name = req.get("server_assignor") or generation.protocol_name
        if asked != epoch:
            generation.step(ex, member_id, code)
            generation.synced(ex.response_time)
        else:
            generation.heartbeats += 1
            generation.seen(ex.request_time)

    def _epoch(self, group: str, epoch: int, ex, asked, member_id, current: Generation | None) -> Generation:
        generation = self.epochs.get((group, epoch))
        if generation is not None:
            return generation
        generation = self.epochs[(group, epoch)] = Generation(group, "consumer", ex.capture_file, ex.broker_address)
        generation.generation_id, generation.protocol_type = epoch, "consumer"
        generation.rebalance_start = ex.request_time
        if current is None or (current.generation_id or 0) < epoch:
            if current is not None:
                current.end("member_joined" if asked == JOINING else "epoch_bumped", ex.request_time, member_id)
            self.latest[group] = generation
        return generation

    def commit(self, ex) -> None:
        req = ex.request or {}
        group = req.get("group_id")
        epoch = req.get("generation_id_or_member_epoch", req.get("generation_id"))  # (TxnOffsetCommit's)
        if group is None:
            return
        generation = (self.epochs.get((group, epoch)) if epoch is not None else None) or self.latest.get(group)
        if generation is not None:
            generation.commit(ex, req, ex.response or {}, self.names)

    def finish(self) -> list[Generation]:
        return list(self.epochs.values())


def _held(before: list[dict] | None, now: list[dict] | None) -> list[dict] | None:
    """The partitions of ``before`` and ``now`` together (assignments as ``named_partitions`` gives them)."""
    if before is None or before == now:
        return now
    if now is None:
        return before
    by_topic: dict[tuple, set] = {}
    for item in (*before, *now):
        by_topic.setdefault((item["topic"], item["topic_id"]), set()).update(item["partitions"])
    return [
        {"topic": topic, "topic_id": topic_id, "partitions": sorted(parts)}
        for (topic, topic_id), parts in sorted(by_topic.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or ""))
    ]
