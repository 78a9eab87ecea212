"""Topic ids to names, learned from the responses of a capture that carry both.

Newer Produce/Fetch (and ConsumerGroupHeartbeat) versions name topics by id only (KIP-516);
Metadata, CreateTopics and DescribeTopicPartitions responses say which name an id has.

A reader of some connections only (one slice of a split read) is handed the ``name_changes`` of
a read of every connection, and ``learning_as_read`` teaches them in the order that read would
have learned them: so its rows name the same topics as one read of the whole capture.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

METADATA, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS = 3, 19, 75
TOPIC_NAMING_APIS = frozenset({METADATA, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS})
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
NameChange = tuple[float, str, str]  # where it was learned (completed_at; inf: at the end), id, name
_END = float("inf")


class TopicNames:
    def __init__(self):
        self.by_id: dict[str, str] = {}

    def learn(self, exchange) -> None:
        for topic_id, name in _named(exchange):
            self.by_id[topic_id] = name

    def name(self, topic_id: str | None) -> str | None:
        return self.by_id.get(topic_id) if topic_id and topic_id != ZERO_UUID else None


def _named(exchange) -> Iterator[tuple[str, str]]:
    if exchange.api_key in TOPIC_NAMING_APIS and exchange.response:
        for topic in exchange.response.get("topics") or ():
            topic_id, name = topic.get("topic_id"), topic.get("name")
            if topic_id and name and topic_id != ZERO_UUID:
                yield topic_id, name


def name_changes(exchanges: Iterable) -> list[NameChange]:
    """Each time ``exchanges`` (in the order read) name an id for the first time or anew: where
    (the packet that completed the exchange; inf for one the end of the input did), id, name."""
    known: dict[str, str] = {}
    changes: list[NameChange] = []
    for ex in exchanges:
        for topic_id, name in _named(ex):
            if known.get(topic_id) != name:
                known[topic_id] = name
                changes.append((_END if ex.completed_at is None else ex.completed_at, topic_id, name))
    return changes


def learning_as_read(exchanges: Iterable, changes: list[NameChange], names: TopicNames) -> Iterator:
    """``exchanges`` of some connections, in the order read, with ``names`` taught before each one
    the ``changes`` (of a read of every connection) learned at an earlier packet, since one read
    would have taught them by then; the rest once ``exchanges`` end. Changes learned at the same
    packet are of the same connection, which the exchange's reader learns by itself."""
    by_id, at, count = names.by_id, 0, len(changes)
    for ex in exchanges:
        where = _END if ex.completed_at is None else ex.completed_at
        while at < count and changes[at][0] < where:
            by_id[changes[at][1]] = changes[at][2]
            at += 1
        yield ex
    for _, topic_id, name in changes[at:]:
        by_id[topic_id] = name
