"""The lag view: one row per Fetch and partition, the offset asked for beside the broker's offsets.

A Fetch request says, per partition, the offset the consumer wants next (``fetch_offset``); its
response says the partition's high watermark, last stable offset and log start offset. So
``high_watermark - fetch_offset`` is how far behind the consumer was at that moment (``lag``).
Rows come from the response's partitions. An incremental fetch (KIP-227: a fetch session, epoch
above 0) lists only partitions whose fetch offset changed, so the rest keep the offset the
session last asked for, remembered per connection and session. Topic ids (Fetch v13+) are named
from Metadata and the like in the same capture (``TopicNames``); a row whose id is named only
later waits for it.
Follower fetches (``replica_id`` 0 or above) are rows too: consumers have -1. A response whose
request was not captured (the long-poll in flight when the capture started, read at its
connection's Fetch version) is rows too, with what the response says (the partition's offsets
and records at that moment) and null where only the request would say (``fetch_offset``,
``lag``, ``replica_id``, ``isolation_level``, ``incremental``); it leaves the fetch session's
offsets as they were.

Owns the row shape (``LAG_COLUMNS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..framing.model import body_cut
from ..spec.error_codes import reported_error
from .topic_names import ZERO_UUID, AwaitingNames, TopicNames

FETCH = 1
_ROW_SIZE = 1024  # about what one row holds
LAG_COLUMNS = (
    "capture_file",
    "connection_id",
    "client_id",
    "client_address",
    "broker_address",
    "request_time",
    "response_time",
    "api_version",
    "replica_id",
    "isolation_level",
    "session_id",
    "incremental",
    "topic",
    "topic_id",
    "partition",
    "fetch_offset",
    "high_watermark",
    "last_stable_offset",
    "log_start_offset",
    "lag",
    "records",
    "error_code",
    "error_name",
)


def lag_rows(exchanges: Iterable, names: TopicNames | None = None) -> Iterator[dict]:
    """Rows (dicts keyed by ``LAG_COLUMNS``) of every Fetch response in ``exchanges``; ``names``:
    topic names to learn into (a reader of some connections is taught others' as well)."""
    builder = LagBuilder(names)
    for ex in exchanges:
        yield from builder.add(ex)
    yield from builder.finish()


class LagBuilder:
    def __init__(self, names: TopicNames | None = None):
        self.names = names if names is not None else TopicNames()
        self.sessions: dict[
            tuple[str, int | None], dict
        ] = {}  # (connection, session id) -> {(topic, partition): offset}
        self.awaiting = AwaitingNames(self.names)

    def add(self, ex) -> Iterator[dict]:
        """The rows of one exchange (none unless it is an answered Fetch); learns topic names from any."""
        self.names.learn(ex)
        if ex.api_key != FETCH or not ex.response:
            return
        # A request not captured, or cut by the capture, says nothing of what it did not hold: no
        # partition is filled from the session, and the session is not told of it.
        whole = ex.request is not None and not body_cut(ex, "request")
        req, resp = ex.request or {}, ex.response
        asked = self._asked(ex, req, resp) if whole else {}
        replica_id = req.get("replica_id")
        if replica_id is None and whole:
            replica_id = (req.get("replica_state") or {}).get("replica_id", -1)
        base = {
            "capture_file": ex.capture_file,
            "connection_id": ex.connection_id,
            "client_id": ex.client_id,
            "client_address": ex.client_address,
            "broker_address": ex.broker_address,
            "request_time": ex.request_time,
            "response_time": ex.response_time,
            "api_version": ex.api_version,
            "replica_id": replica_id,
            "isolation_level": req.get("isolation_level"),
            "session_id": resp.get("session_id"),
            "incremental": _incremental(req) if whole else None,
        }
        for topic in resp.get("responses") or ():
            key = _topic_key(topic)
            for p in topic.get("partitions") or ():
                if "partition_index" not in p:
                    continue  # (the capture cut the response at this partition: nothing of it read)
                yield from self._row(base, key, p, asked.get((key, p.get("partition_index"))))

    def _row(self, base: dict, key: tuple, p: dict, fetch_offset: int | None) -> Iterator[dict]:
        row = dict(base)
        hwm = p.get("high_watermark")
        code = p.get("error_code")
        name, topic_id = key
        row.update(
            topic=name,
            topic_id=topic_id,
            partition=p.get("partition_index"),
            fetch_offset=fetch_offset,
            high_watermark=hwm,
            last_stable_offset=p.get("last_stable_offset"),
            log_start_offset=p.get("log_start_offset"),
            lag=hwm - fetch_offset
            if hwm is not None and fetch_offset is not None and hwm >= 0 and fetch_offset >= 0
            else None,
            # a batch cut short at the response's size limit is not returned: the consumer fetches it again
            records=(  # (null where the capture cut the response before its records)
                sum(len(b.get("records") or ()) for b in p.get("records") or () if not b.get("truncated"))
                if "records" in p
                else None
            ),
            error_code=code,
            error_name=reported_error(code),
        )
        if name is None:
            row["topic"] = self.names.name(topic_id)
            if row["topic"] is None and topic_id:
                yield from self.awaiting.hold(row, _ROW_SIZE)
                return
        yield row

    def _asked(self, ex, req: dict, resp: dict) -> dict:
        """(topic, partition) -> fetch offset this request stands for, the session's included."""
        asked = {}
        for topic in req.get("topics") or ():
            key = _topic_key(topic)
            for p in topic.get("partitions") or ():
                asked[(key, p.get("partition"))] = p.get("fetch_offset")
        if not _incremental(req):
            if resp.get("session_id"):
                self.sessions[(ex.connection_id, resp["session_id"])] = dict(asked)
            return asked
        session = self.sessions.setdefault((ex.connection_id, req.get("session_id")), {})
        for topic in req.get("forgotten_topics_data") or ():
            key = _topic_key(topic)
            for partition in topic.get("partitions") or ():
                session.pop((key, partition), None)
        session.update(asked)
        return dict(session)

    def finish(self) -> Iterator[dict]:
        """Rows held for a topic name: named if it was learned since, else with the id only."""
        yield from self.awaiting.release()


def _incremental(req: dict) -> bool:
    return bool(req.get("session_id")) and (req.get("session_epoch") or 0) > 0


def _topic_key(topic: dict) -> tuple[str | None, str | None]:
    """(name, id) of a topic entry: older versions name it, v13+ give its id only."""
    name = topic.get("topic")
    if name:
        return name, None
    topic_id = topic.get("topic_id")
    return None, topic_id if topic_id != ZERO_UUID else None
