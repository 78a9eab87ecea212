"""Topic ids to names, learned from the responses of a capture that carry both.

Newer Produce/Fetch (and ConsumerGroupHeartbeat) versions name topics by id only (KIP-516);
Metadata, CreateTopics and DescribeTopicPartitions responses say which name an id has.

A reader of some connections only (one slice of a split read) may be asked for an id that only
another connection named. ``learning_as_read`` hands its ``TopicNames`` a way to the
``name_changes`` of a read of every connection, fetched the first time an id is not known, and
learned as that read would have learned them by then. A known id needs none: Kafka never gives
a topic id another name, so what the reader's own connections taught is what the whole read
knows. Its rows name the same topics as one read of the whole capture, and a slice whose own
connections name all it needs never asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ..spec.api_keys import TOPIC_NAMING_APIS

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
# Where a name was learned: the packet that completed its exchange (completed_at), or _END for an
# exchange the end of the input completed; _AFTER: once a reader's exchanges are all read.
_END = 1 << 62
_AFTER = _END + 1
NameChange = tuple[int, str, str]  # where it was learned, id, name


class TopicNames:
    def __init__(self):
        self.by_id: dict[str, str] = {}
        self.position = _AFTER  # where the exchange being read was completed (see learning_as_read)
        self._elsewhere: Callable[[], list[NameChange]] | None = None
        self._changes: list[NameChange] | None = None
        self._learned = 0  # how many of the changes are learned

    def learn(self, exchange) -> None:
        for topic_id, name in _named(exchange):
            self.by_id[topic_id] = name

    def name(self, topic_id: str | None) -> str | None:
        if not topic_id or topic_id == ZERO_UUID:
            return None
        name = self.by_id.get(topic_id)
        if name is None and self._elsewhere is not None:
            self._learn_elsewhere()
            name = self.by_id.get(topic_id)
        return name

    def _learn_elsewhere(self) -> None:
        """The changes learned elsewhere before ``position`` (a change at the same packet is of
        the exchange's own connection, which its reader learns by itself)."""
        if self._changes is None:
            assert self._elsewhere is not None
            self._changes = self._elsewhere()
        changes, at, by_id = self._changes, self._learned, self.by_id
        while at < len(changes) and changes[at][0] < self.position:
            by_id[changes[at][1]] = changes[at][2]
            at += 1
        self._learned = at


def _named(exchange) -> Iterator[tuple[str, str]]:
    if exchange.api_key in TOPIC_NAMING_APIS and exchange.response:
        for topic in exchange.response.get("topics") or ():
            topic_id, name = topic.get("topic_id"), topic.get("name")
            if topic_id and name and topic_id != ZERO_UUID:
                yield topic_id, name


def name_changes(exchanges: Iterable) -> list[NameChange]:
    """Each time ``exchanges`` (in the order read) name an id for the first time or anew: where
    (the packet that completed the exchange, or _END), id, name."""
    known: dict[str, str] = {}
    changes: list[NameChange] = []
    for ex in exchanges:
        for topic_id, name in _named(ex):
            if known.get(topic_id) != name:
                known[topic_id] = name
                changes.append((_END if ex.completed_at is None else ex.completed_at, topic_id, name))
    return changes


def learning_as_read(exchanges: Iterable, elsewhere: Callable[[], list[NameChange]], names: TopicNames) -> Iterator:
    """``exchanges`` of some connections, in the order read, with ``names`` told where each one
    was read, and how to get the ``name_changes`` of a read of every connection (``elsewhere``,
    called at most once, when an id is first not known): it learns those of earlier packets, as
    that read would have by then, and all of them once ``exchanges`` end. (Exchanges the end of
    the input completed are one place: there, those of its other connections wait for the end.)"""
    names._elsewhere = elsewhere
    for ex in exchanges:
        names.position = _END if ex.completed_at is None else ex.completed_at
        yield ex
    names.position = _AFTER
