"""What the groups view knows of one group generation (or KIP-848 epoch), and its row.

Owns the row shape (``GROUP_COLUMNS``) and the bookkeeping both group protocols share: members,
the steps of a rebalance, heartbeats, commits and how the generation ended. Deciding which
exchange belongs to which generation is ``groups`` (classic) and ``group_epochs`` (KIP-848).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ..framing.model import body_cut
from ..spec.error_codes import reported_error
from .topic_names import TopicNames

GROUP_COLUMNS = (
    "capture_file",
    "group_id",
    "group_protocol",
    "generation_id",
    "protocol_type",
    "protocol_name",
    "leader",
    "coordinator",
    "members",
    "member_count",
    "rebalance_start",
    "rebalance_end",
    "rebalance_ms",
    "rebalance_start_captured",
    "joins",
    "rebalance_steps",
    "rebalance_errors",
    "heartbeats",
    "heartbeat_errors",
    "commits",
    "committed",
    "ended",
    "ended_time",
    "ended_member",
)
_NEVER = datetime.min.replace(tzinfo=timezone.utc)


def by_time(ex) -> tuple:
    """Sort key of an exchange: when its request was sent (else when its response came)."""
    t = ex.request_time or ex.response_time
    return (t is None, t or _NEVER)


def named_partitions(items, topic_field: str, names: TopicNames) -> list[dict]:
    """[{topic, topic_id, partitions}] from an assignment's topic entries (by name or by id)."""
    out = []
    for item in items or ():
        topic_id = item.get("topic_id") if topic_field == "topic_id" else None
        topic = names.name(topic_id) if topic_id else item.get(topic_field)
        out.append({"topic": topic, "topic_id": topic_id, "partitions": sorted(item.get("partitions") or [])})
    return sorted(out, key=lambda t: (t["topic"] or "", t["topic_id"] or ""))


class Member:
    __slots__ = ("assignment", "client_address", "client_id", "instance_id", "left", "member_id", "subscribed_topics")

    def __init__(self, member_id: str | None):
        self.member_id = member_id
        self.instance_id: str | None = None
        self.client_id: str | None = None
        self.client_address: str | None = None
        self.subscribed_topics: list[str] | None = None
        self.assignment: list[dict] | None = None
        self.left: datetime | None = None

    def seen_in(self, ex) -> None:
        self.client_id = self.client_id or ex.client_id
        self.client_address = self.client_address or ex.client_address

    def subscribe(self, subscription: dict) -> None:
        if subscription.get("topics") is not None:
            self.subscribed_topics = list(subscription["topics"])

    def row(self) -> dict:
        return {
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "client_id": self.client_id,
            "client_address": self.client_address,
            "subscribed_topics": self.subscribed_topics,
            "assignment": self.assignment,
            "left_time": self.left,
        }


class Generation:
    def __init__(self, group_id: str, group_protocol: str, capture_file: str, coordinator: str | None):
        self.group_id, self.group_protocol = group_id, group_protocol
        self.capture_file, self.coordinator = capture_file, coordinator
        self.generation_id: int | None = None
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader: str | None = None
        self.members: dict[str | None, Member] = {}
        self.rebalance_start: datetime | None = None
        self.rebalance_end: datetime | None = None
        self.given_at: datetime | None = None  # when a join was first answered with its id
        self.steps: list[dict] = []
        self.listed: set[str | None] = set()  # the members the leader names (JoinGroup answer, SyncGroup)
        # The rebalance's first JoinGroup here begins it: a new member's (no id yet), or one after
        # a generation of the group that the capture holds.
        self.began_here = False
        self.heartbeats = 0
        self.heartbeat_errors: list[str] = []
        self.commits = 0
        self.committed: dict[tuple, int] = {}
        self.ended: str | None = None
        self.ended_time: datetime | None = None
        self.ended_member: str | None = None
        self.first_seen: datetime | None = None

    def seen(self, t: datetime | None) -> None:
        if t is not None and (self.first_seen is None or t < self.first_seen):
            self.first_seen = t

    def member(self, member_id: str | None) -> Member:
        member = self.members.get(member_id)
        if member is None:
            member = self.members[member_id] = Member(member_id)
        return member

    def step(self, ex, member_id: str | None, code: int | None) -> None:
        """One JoinGroup / SyncGroup (or KIP-848 heartbeat) of this generation's rebalance."""
        self.seen(ex.request_time)
        self.steps.append(
            {
                "time": ex.request_time,
                "api_name": ex.api_name,
                "member_id": member_id,
                "client_id": ex.client_id,
                # no response read: the exchange's status says why (unanswered, gap, malformed)
                "error": reported_error(code) if ex.response is not None else ex.status,
            }
        )

    def synced(self, t: datetime | None) -> None:
        if t is not None and (self.rebalance_end is None or t > self.rebalance_end):
            self.rebalance_end = t

    def end(self, why: str, t: datetime | None, member_id: str | None) -> None:
        """The first reason wins: what ended a generation is what happened to it first."""
        if self.ended is None:
            self.ended, self.ended_time, self.ended_member = why, t, member_id

    def commit(self, ex, req: dict, resp: dict, names: TopicNames) -> None:
        self.seen(ex.request_time)
        self.commits += 1
        if req.get("member_id"):
            self.member(req["member_id"]).seen_in(ex)
        failed: set[tuple] = set()
        answered: set[tuple] = set()
        for topic in resp.get("topics") or ():
            for p in topic.get("partitions") or ():
                key = (topic.get("name") or names.name(topic.get("topic_id")), p.get("partition_index"))
                (failed if p.get("error_code") or "error_code" not in p else answered).add(key)
        cut = body_cut(ex, "response")  # (a partition the cut left out of the answer is not known committed)
        for topic in req.get("topics") or ():
            name = topic.get("name") or names.name(topic.get("topic_id"))
            for p in topic.get("partitions") or ():
                key = (name, p.get("partition_index"))
                if key not in failed and ex.response is not None and (not cut or key in answered):
                    if "committed_offset" in p:
                        self.committed[key] = p["committed_offset"]

    def start_captured(self) -> bool | None:
        """Whether the capture holds the rebalance from its start, so that ``rebalance_ms`` is its
        whole length, not a lower bound. Every member must join a rebalance, and the leader names
        them all. The start is held if the first JoinGroup here has its request and begins the
        rebalance (``began_here``), and every member the leader names joins here (a join whose
        member id was not read may be any one of them). None where the rebalance was not seen
        from a join to its end, and for KIP-848 epochs, which have no such list."""
        if self.group_protocol != "classic" or self.rebalance_start is None or self.rebalance_end is None:
            return None
        joins = [s for s in self.steps if s["api_name"] == "JoinGroup"]
        if not joins or joins[0]["time"] is None or not self.began_here:
            return False
        unknown = sum(1 for s in joins if s["member_id"] is None)
        return len(self.listed - {s["member_id"] for s in joins}) <= unknown

    def sort_time(self) -> datetime:
        return self.rebalance_start or self.first_seen or _NEVER

    def row(self) -> dict:
        members = [m.row() for m in self.members.values() if m.member_id]
        start, end = self.rebalance_start, self.rebalance_end
        errors = []
        for s in self.steps:
            if s["error"] is not None and s["error"] not in errors:
                errors.append(s["error"])
        return {
            "capture_file": self.capture_file,
            "group_id": self.group_id,
            "group_protocol": self.group_protocol,
            "generation_id": self.generation_id,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "leader": self.leader,
            "coordinator": self.coordinator,
            "members": members,
            "member_count": len(members),
            "rebalance_start": start,
            "rebalance_end": end,
            "rebalance_ms": milliseconds(end - start) if start and end else None,
            "rebalance_start_captured": self.start_captured(),
            "joins": sum(1 for s in self.steps if s["api_name"] in ("JoinGroup", "ConsumerGroupHeartbeat")),
            "rebalance_steps": list(self.steps),
            "rebalance_errors": errors,
            "heartbeats": self.heartbeats,
            "heartbeat_errors": sorted(set(self.heartbeat_errors)),
            "commits": self.commits,
            "committed": [
                {"topic": t, "partition": p, "offset": o}
                for (t, p), o in sorted(
                    self.committed.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] if kv[0][1] is not None else -1)
                )
            ],
            "ended": self.ended or "end_of_capture",
            "ended_time": self.ended_time,
            "ended_member": self.ended_member,
        }


def milliseconds(span: timedelta) -> float:
    """A span in milliseconds from its whole microseconds, as ``latency_ms`` is from whole nanoseconds:
    ``total_seconds() * 1000`` gives 3005.3399999999997 for 3005.34."""
    return (span // timedelta(microseconds=1)) / 1e3
