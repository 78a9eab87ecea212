"""Topic ids to names, learned from the responses of a capture that carry both.

Newer Produce/Fetch (and ConsumerGroupHeartbeat) versions name topics by id only (KIP-516);
Metadata, CreateTopics and DescribeTopicPartitions responses say which name an id has. Kafka
never gives a topic id another name, so any response of the capture that names an id names
every row that has it, before that response as well as after: a capture that starts in the
middle of long-lived connections has Fetches by id long before a client refreshes its metadata
(every five minutes by default).

So a row whose id is not known yet waits (``AwaitingNames``) until the end of the read, and is
named by the first name the read learned for its id. That needs nothing more as long as the
reader reads every connection's naming responses. A reader of some connections only (one slice
of a split read), and any reader holding more rows than ``HOLD_BUDGET``, instead looks ahead: it
is handed (``TopicNames(elsewhere=...)``) a way to the first names of a read of every connection,
fetched at most once, and from then on names an id from them as soon as it meets it. That read
(``NamesAhead``) goes only as far into the capture as the ids asked about need.
A stream's micro-batch cannot see past its packets: its way is back, to the names its capture
session's earlier files give (``spark.naming_pass.earlier_names``).

The exchanges view, and the typed views of apis that name topics by id, give each row's ids
and their names (``IdNaming``, the ``topic_names`` column); their rows wait for names as records
rows do. Only bodies of versions that can hold an id are walked for them (``IdCarriers``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from ..spec.api_keys import ENVELOPE, TOPIC_NAMING_APIS
from ..spec.field_paths import field_paths
from ..spec.registry import SpecRegistry

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
TOPIC_ID = "topic_id"
TOPIC_NAMES = "topic_names"  # the column of each row's ids and their names (typed views; exchanges with topicNames)
HOLD_BUDGET = 32 << 20  # bytes of rows one reader holds for a name its capture may give later


class NameLookup(Protocol):
    """The first names of a read of every connection (a dict, or ``NamesAhead``)."""

    def get(self, topic_id: str, /) -> str | None: ...


class TopicNames:
    """``elsewhere``: how to get the first names of a read of every connection (``first_names``,
    or ``NamesAhead`` to read only as far as the ids asked about need; None: there is none);
    ``complete``: whether the reader reads every connection's naming responses itself, so that
    what it has learned at the end is all the capture says."""

    def __init__(self, elsewhere: Callable[[], NameLookup] | None = None, complete: bool = True):
        self.by_id: dict[str, str] = {}  # the first name learned for each id
        self.complete = complete
        self._elsewhere = elsewhere
        self._ahead: NameLookup | None = None  # elsewhere's first names

    def learn(self, exchange) -> None:
        for topic_id, name in _named(exchange):
            self.by_id.setdefault(topic_id, name)

    def name(self, topic_id: str | None) -> str | None:
        """The name of ``topic_id`` as learned so far (after looking ahead: in the whole capture)."""
        if not topic_id or topic_id == ZERO_UUID:
            return None
        name = self.by_id.get(topic_id)
        if name is None and self._ahead is not None:
            name = self._ahead.get(topic_id)
        return name

    @property
    def looked_ahead(self) -> bool:
        """Whether every name the capture gives is known (an id ``name`` does not know has none)."""
        return self._ahead is not None

    def look_ahead(self) -> None:
        """Learn the whole capture's names (once), if there is a way."""
        if self._ahead is None and self._elsewhere is not None:
            self._ahead = self._elsewhere()


class AwaitingNames:
    """Rows whose topic id was not known when they were read, held until ``release`` names
    them, up to ``budget`` bytes: past it, the names look ahead (if they can) and the rows held
    go out, named as well as is known then. Rows are dicts with ``topic`` and ``topic_id``
    (records, lag), or anything ``waits`` tells about and ``name`` names (a typed view's
    exchanges: ``IdNaming``)."""

    def __init__(
        self,
        names: TopicNames,
        budget: int | None = None,
        waits: Callable[[Any], bool] | None = None,
        name: Callable[[Any], None] | None = None,
    ):
        self.names, self.budget = names, HOLD_BUDGET if budget is None else budget
        self.waits = waits or self._record_waits
        self.name = name or self._name_record
        self.rows: list = []
        self.size = 0

    def hold(self, row, size: int) -> Iterator:
        """The rows that go out now: none while ``row`` waits (``size``: about what it holds)."""
        if self.names.looked_ahead:  # no name will come later (the row was read before it looked)
            self.name(row)
            yield row
            return
        self.rows.append(row)
        self.size += size
        if self.size > self.budget:
            self.names.look_ahead()
            yield from self.release()

    def release(self) -> Iterator:
        """Every row held, named if its id was named."""
        if not self.names.complete and any(map(self.waits, self.rows)):
            self.names.look_ahead()  # others' connections may name it
        for row in self.rows:
            self.name(row)
            yield row
        self.rows, self.size = [], 0

    def _record_waits(self, row: dict) -> bool:
        return self.names.name(row["topic_id"]) is None

    def _name_record(self, row: dict) -> None:
        row["topic"] = self.names.name(row["topic_id"])


def _named(exchange) -> Iterator[tuple[str, str]]:
    if exchange.api_key in TOPIC_NAMING_APIS and exchange.response:
        for topic in exchange.response.get("topics") or ():
            topic_id, name = topic.get("topic_id"), topic.get("name")
            if topic_id and name and topic_id != ZERO_UUID:
                yield topic_id, name


class NamesAhead:
    """The first names ``exchanges`` (a read of every connection) give, read only as far as the
    ids asked about need: an id named early in the capture costs a read of its start, an id
    named nowhere the whole read. The read left off is taken up by the next ``get``."""

    def __init__(self, exchanges: Iterable):
        self.by_id: dict[str, str] = {}
        self._rest: Iterator | None = iter(exchanges)
        self.broken = False  # the read raised: what it gave is not all the capture says
        self.read = 0  # exchanges read so far

    @property
    def finished(self) -> bool:
        """Whether the whole read is done (an id ``get`` does not name is named nowhere)."""
        return self._rest is None

    def get(self, topic_id: str) -> str | None:
        name = self.by_id.get(topic_id)
        while name is None and self._learn_next():
            name = self.by_id.get(topic_id)
        return name

    def all(self) -> dict[str, str]:
        """Every first name the whole read gives."""
        while self._learn_next():
            pass
        return self.by_id

    def _learn_next(self) -> bool:
        """Learn the names of the next exchange read; False: there is none."""
        if self._rest is None:
            return False
        try:
            exchange = next(self._rest)
        except StopIteration:
            self._rest = None
            return False
        except BaseException:
            self._rest, self.broken = None, True
            raise
        self.read += 1
        for topic_id, name in _named(exchange):
            self.by_id.setdefault(topic_id, name)
        return True


def first_names(exchanges: Iterable) -> dict[str, str]:
    """The first name ``exchanges`` give each topic id."""
    return NamesAhead(exchanges).all()


class IdNaming:
    """The ``topic_names`` of a view's rows: each topic id a row's bodies hold, with its
    name as ``names`` knows it. A row with an id not named yet waits (``awaiting``) as a
    records row does."""

    def __init__(self, names: TopicNames | None = None, carries: Callable[[int, int], bool] | None = None):
        """``carries(api_key, api_version)``: whether bodies of that version can hold a topic id
        (``IdCarriers``; None: every body is walked for ids)."""
        self.names = names if names is not None else TopicNames()
        self._carries = carries
        self._last: tuple[object, list[str]] | None = None  # the last exchange asked about, and its ids

    def awaiting(self) -> AwaitingNames:
        """Where this read's rows wait for names (the names are those the read learns into)."""
        return AwaitingNames(self.names, waits=self.waits, name=_named_when_added)

    def waits(self, exchange) -> bool:
        """Whether ``exchange`` holds a topic id not named yet."""
        names = self.names
        return any(names.name(i) is None for i in self._ids(exchange))

    def of(self, exchange) -> list[tuple[str, str | None]] | None:
        """(id, name) pairs in the order the bodies hold them; None: the row names no topic by id."""
        ids = self._ids(exchange)
        if not ids:
            return None
        return [(i, self.names.name(i)) for i in ids]

    def _ids(self, exchange) -> list[str]:
        """The exchange's topic ids: a row is asked whether it waits, then for its names; its
        bodies are walked once."""
        last = self._last
        if last is None or last[0] is not exchange:
            carries, api_key, api_version = self._carries, exchange.api_key, exchange.api_version
            if (
                carries is not None
                and api_key is not None
                and api_version is not None
                and not carries(api_key, api_version)
            ):
                last = self._last = (exchange, [])
            else:
                last = self._last = (exchange, topic_ids(exchange.request, exchange.response))
        return last[1]


class IdCarriers:
    """Whether the bodies of an api at a version can hold a topic id, by the definitions: a
    read whose every row is asked walks only the bodies that can. An Envelope's can whatever its
    version: it carries a whole request and response, decoded with the rest."""

    def __init__(self, registry: SpecRegistry):
        self._registry = registry
        self._known: dict[tuple[int, int], bool] = {}

    def __call__(self, api_key: int, api_version: int) -> bool:
        known = self._known.get((api_key, api_version))
        if known is None:
            known = api_key == ENVELOPE or names_topics_by_id(self._registry, api_key, [api_version])
            self._known[api_key, api_version] = known
        return known


def _named_when_added(exchange) -> None:
    """An exchange's names are looked up when its row is built (``IdNaming.of``)."""


def topic_ids(*bodies) -> list[str]:
    """The topic ids in decoded ``bodies`` (the zero UUID, "no id", left out), each once."""
    found: dict[str, None] = {}
    for body in bodies:
        if body:
            _collect_ids(body, found)
    return list(found)


def _collect_ids(value, found: dict[str, None]) -> None:
    if type(value) is list:
        for item in value:
            if type(item) is dict or type(item) is list:
                _collect_ids(item, found)
        return
    for key, v in value.items():
        t = type(v)
        if t is dict or (t is list and key != "records"):  # record batches name no topics
            _collect_ids(v, found)
        elif key == TOPIC_ID and v and v != ZERO_UUID:
            found[v] = None


def names_topics_by_id(registry: SpecRegistry, api_key: int, versions) -> bool:
    """Whether the request or response of ``api_key`` has a topic id at any of ``versions``."""
    for message in (registry.request(api_key), registry.response(api_key)):
        if message is None:
            continue
        for version in versions:
            if version in message.valid_versions and field_paths(
                registry.resolved(message.name, version), lambda f: f.name == TOPIC_ID
            ):
                return True
    return False
