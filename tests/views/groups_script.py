"""Test helper: group coordinator exchanges written as a script, for the groups view's builder.

Each call adds one answered exchange at the next tenth of a second; bodies carry only the fields
the groups view reads, named as the decoder names them.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from kafka_protocol_source import Exchange

START = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
NAMES = {
    3: "Metadata",
    8: "OffsetCommit",
    28: "TxnOffsetCommit",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    68: "ConsumerGroupHeartbeat",
}
CLIENTS = {"A": ("10.0.0.1:40001", "app-a"), "B": ("10.0.0.2:40002", "app-b"), "C": ("10.0.0.3:40003", "app-c")}


class GroupScript:
    def __init__(self, group: str = "orders"):
        self.group = group
        self.exchanges: list[Exchange] = []
        self.t = START

    def _add(self, who: str, api_key: int, request: dict, response: dict | None, wait_s: float = 0.001) -> Exchange:
        address, client_id = CLIENTS[who]
        self.t += timedelta(milliseconds=100)
        ex = Exchange(
            capture_file="script",
            connection_id=f"{address}->10.0.0.9:9092#0",
            client_address=address,
            broker_address="10.0.0.9:9092",
            request_time=self.t,
            response_time=self.t + timedelta(seconds=wait_s) if response is not None else None,
            latency_ms=wait_s * 1000 if response is not None else None,
            api_key=api_key,
            api_name=NAMES[api_key],
            api_version=5,
            correlation_id=len(self.exchanges),
            client_id=client_id,
            request_size=10,
            response_size=10 if response is not None else None,
            request=request,
            response=response,
            status="ok" if response is not None else "unanswered",
        )
        self.exchanges.append(ex)
        return ex

    def join(self, who, member_id="", error=0, generation=-1, leader="", assigned_id=None, members=(), wait_s=0.001):
        request = {
            "group_id": self.group,
            "member_id": member_id,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"", "metadata_decoded": {"version": 0, "topics": ["t"]}}],
        }
        response = {
            "error_code": error,
            "generation_id": generation,
            "protocol_name": "range" if not error else "",
            "leader": leader,
            "member_id": assigned_id or member_id,
            "members": [
                {
                    "member_id": m,
                    "group_instance_id": None,
                    "metadata": b"",
                    "metadata_decoded": {"version": 0, "topics": ["t"]},
                }
                for m in members
            ],
        }
        return self._add(who, 11, request, response, wait_s)

    def sync(self, who, member_id, generation, assignments=None, mine=None, error=0):
        request = {
            "group_id": self.group,
            "generation_id": generation,
            "member_id": member_id,
            "assignments": [
                {
                    "member_id": m,
                    "assignment": b"",
                    "assignment_decoded": {"version": 0, "assigned_partitions": [{"topic": "t", "partitions": p}]},
                }
                for m, p in (assignments or {}).items()
            ],
        }
        response = {"error_code": error, "assignment": b""}
        if mine is not None:
            response["assignment_decoded"] = {"version": 0, "assigned_partitions": [{"topic": "t", "partitions": mine}]}
        return self._add(who, 14, request, response)

    def heartbeat(self, who, member_id, generation, error=0):
        return self._add(
            who,
            12,
            {"group_id": self.group, "generation_id": generation, "member_id": member_id},
            {"error_code": error},
        )

    def leave(self, who, member_id):
        return self._add(
            who,
            13,
            {"group_id": self.group, "members": [{"member_id": member_id, "reason": "bye"}]},
            {"error_code": 0, "members": [{"member_id": member_id, "error_code": 0}]},
        )

    def commit(self, who, member_id, generation, offsets: dict[int, int]):
        request = {"group_id": self.group, "generation_id_or_member_epoch": generation, "member_id": member_id}
        return self._add(who, 8, *_committing(request, offsets))

    def txn_commit(self, who, member_id, generation, offsets: dict[int, int]):
        """A TxnOffsetCommit (v3+: with the generation and member) of an exactly-once producer."""
        request = {
            "transactional_id": "tx",
            "group_id": self.group,
            "producer_id": 7,
            "producer_epoch": 0,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": None,
        }
        return self._add(who, 28, *_committing(request, offsets))

    def metadata(self, topics: dict[str, str]):
        return self._add(
            "A",
            3,
            {"topics": None},
            {"topics": [{"name": n, "topic_id": i, "partitions": []} for i, n in topics.items()]},
        )

    def consumer_heartbeat(self, who, member_id, epoch, answer_epoch=None, assignment=None, error=0, subscribe=None):
        request = {
            "group_id": self.group,
            "member_id": member_id,
            "member_epoch": epoch,
            "instance_id": None,
            "subscribed_topic_names": subscribe,
            "server_assignor": "uniform" if epoch == 0 else None,
            "topic_partitions": None,
        }
        response = {
            "error_code": error,
            "member_id": member_id,
            "member_epoch": answer_epoch,
            "heartbeat_interval_ms": 5000,
            "assignment": None
            if assignment is None
            else {"topic_partitions": [{"topic_id": t, "partitions": p} for t, p in assignment.items()]},
        }
        return self._add(who, 68, request, response)


def _committing(request: dict, offsets: dict[int, int]) -> tuple[dict, dict]:
    """A commit request of ``offsets`` (partition -> offset of topic t), and its answer of no errors."""
    partitions = [{"partition_index": p, "committed_offset": o} for p, o in offsets.items()]
    response = {"topics": [{"name": "t", "partitions": [{"partition_index": p, "error_code": 0} for p in offsets]}]}
    return {**request, "topics": [{"name": "t", "partitions": partitions}]}, response
