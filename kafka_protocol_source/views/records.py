"""The records view: one row per record produced (Produce requests) or fetched (Fetch responses).

Columns follow Spark's own Kafka source (key, value, topic, partition, offset, timestamp,
timestampType, headers) so queries written for it work here, plus where the record was seen.
Newer Produce/Fetch versions name topics by id only (KIP-516); ``TopicNames`` learns id -> name
from the Metadata, CreateTopics and DescribeTopicPartitions responses of the same capture.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from ..framing import FAILFAST_ERROR
from ..framing.model import GAP
from ..spec.api_keys import FETCH, PRODUCE
from ..spec.error_codes import reported_error
from .topic_names import ZERO_UUID as _ZERO_UUID
from .topic_names import TopicNames

_TIMESTAMP_TYPES = {"CreateTime": 0, "LogAppendTime": 1}
MIN_RECORD_BYTES = 26  # the smallest whole record: a v0 message without key or value
_ROW_OVERHEAD = 1200  # a row's dict and its other columns (measured: about 1.2 kB)
_HEADER_OVERHEAD = 300  # a header's dict, its key's str and its value's bytes (measured: about 270 B)


def record_rows(exchange, names: TopicNames):
    """Yield one dict per record in the exchange (in the RECORDS_VIEW column order); where the
    capture cut the frame that held them, one row more that says so."""
    if exchange.api_key == PRODUCE:
        where: tuple = (None, None, None)  # (topic, topic id, partition) the cut fell in
        answers = _produce_answers(exchange.response, names)
        for topic in (exchange.request or {}).get("topic_data") or ():
            name, topic_id = _topic(topic, names, "name")
            where = (name, topic_id, None)  # (a cut inside the topic's first partition's index)
            for part in topic.get("partition_data") or ():
                answer = answers.get((name or topic_id, part.get("index")))
                where = (name, topic_id, part.get("index"))
                yield from _batches(exchange, "produce", name, topic_id, part.get("index"), part.get("records"), answer)
        cut = _cut_off(exchange.status, exchange.request_size, exchange.raw_request)
        if cut >= MIN_RECORD_BYTES or (cut and _records_cut(exchange.request)):
            yield _cut_row(exchange, "produce", where, cut)
    elif exchange.api_key == FETCH:
        # A read_uncommitted consumer keeps every record: brokers list no aborted transactions for it
        # (Apache Kafka sends null, some brokers an empty list), so whether any was aborted is not said.
        # Without the request, an empty list is that, or a read_committed fetch with none aborted.
        request = exchange.request
        uncommitted = request is not None and request.get("isolation_level") == 0
        where = (None, None, None)
        for topic in (exchange.response or {}).get("responses") or ():
            name, topic_id = _topic(topic, names, "topic")
            where = (name, topic_id, None)
            for part in topic.get("partitions") or ():
                answer = (part.get("error_code") or 0, None)
                batches = part.get("records")
                listed = None if uncommitted else part.get("aborted_transactions")
                aborted = aborted_batches(batches or (), None if request is None and not listed else listed)
                where = (name, topic_id, part.get("partition_index"))
                yield from _batches(
                    exchange, "fetch", name, topic_id, part.get("partition_index"), batches, answer, aborted
                )
        if (cut := _cut_off(exchange.status, exchange.response_size, exchange.raw_response)) >= MIN_RECORD_BYTES:
            yield _cut_row(exchange, "fetch", where, cut)


def _records_cut(request: dict | None) -> bool:
    """Whether the capture's cut went through a Produce request's records: its last partition
    read has no records left (a field the cut went through is left out) or a last batch cut
    short. Then a record is lost however few bytes are missing (the rest of it is before the cut)."""
    parts = [p for t in (request or {}).get("topic_data") or () for p in t.get("partition_data") or ()]
    if not parts:
        return False
    batches = parts[-1].get("records")
    return not batches or bool(batches[-1].get("truncated"))


def _cut_off(status: str, size: int | None, raw: bytes | None) -> int:
    """How many bytes of a frame the capture cut off (its ``raw`` bytes are those it has)."""
    if status != GAP or size is None or raw is None:
        return 0
    return size - 4 - len(raw)


def _cut_row(exchange, direction: str, where: tuple, cut: int) -> dict:
    """The row that says the capture cut the frame holding records (a small snaplen cuts nearly
    all of them), after those read: at the partition the cut fell in, as far as the body tells.
    Only where the bytes cut off could hold a whole record (``MIN_RECORD_BYTES``)."""
    side = "request" if direction == "produce" else "response"
    return {
        **_exchange_columns(exchange, direction, *where),
        **_UNREAD,
        **dict.fromkeys(_BATCH_COLUMNS),
        "crc_valid": None,
        "offset_assigned": False,
        "error_name": None,
        "error": f"the capture cut this {side}: its last {cut} bytes, which may hold records, are not in it "
        f"({exchange.error})",
    }


def _exchange_columns(exchange, direction: str, topic, topic_id, partition) -> dict:
    return {
        "topic": topic,
        "partition": partition,
        "direction": direction,
        "client_id": exchange.client_id,
        "client_address": exchange.client_address,
        "broker_address": exchange.broker_address,
        "request_time": exchange.request_time,
        "response_time": exchange.response_time,
        "api_version": exchange.api_version,
        "topic_id": topic_id,
        "capture_file": exchange.capture_file,
        "connection_id": exchange.connection_id,
    }


_BATCH_COLUMNS = (
    "compression",
    "batch_offset",
    "producer_id",
    "is_transactional",
    "is_control",
    "is_aborted",
    "timestampType",
)


def aborted_batches(batches: Sequence[dict], aborted_transactions: list[dict] | None) -> list[bool | None]:
    """Per fetched batch: whether a read_committed consumer drops it as part of an aborted
    transaction, decided as Kafka's consumer decides it (``CompletedFetch``): the partition's
    ``aborted_transactions`` (producer id, first offset) open as batches reach their first offset,
    a producer's ABORT marker closes its own, and a transactional batch of an open producer is
    aborted. None for every batch when there is no such list (a version before 4; the caller
    passes None for a read_uncommitted fetch too): whether any was aborted is not said there."""
    if aborted_transactions is None:
        return [None] * len(batches)
    starts: list[tuple[int, int]] = sorted(
        (t["first_offset"], t["producer_id"])
        for t in aborted_transactions
        if t.get("first_offset") is not None and t.get("producer_id") is not None
    )
    open_: set = set()
    out: list[bool | None] = []
    at = 0
    for batch in batches:
        producer = batch.get("producer_id")
        if batch.get("magic") != 2 or producer is None or producer < 0:
            out.append(False)  # no producer id: never part of a transaction
            continue
        last = (batch.get("base_offset") or 0) + (batch.get("last_offset_delta") or 0)
        while at < len(starts) and starts[at][0] <= last:
            open_.add(starts[at][1])
            at += 1
        if batch.get("is_control"):
            records = batch.get("records") or ()
            if records and (records[0].get("control") or {}).get("type") == 0:  # an ABORT marker
                open_.discard(producer)
            out.append(False)
        else:
            out.append(bool(batch.get("is_transactional")) and producer in open_)
    return out


def by_read_mode(rows, mode: str):
    """The records view's rows as the read mode says: a row of records that could not be read is
    kept (PERMISSIVE), dropped (DROPMALFORMED) or fails the read (FAILFAST)."""
    if mode == "PERMISSIVE":
        yield from rows
        return
    for row in rows:
        if row["error"] is None:
            yield row
        elif mode == "FAILFAST":
            where = f"connection {row['connection_id']}, {row['direction']} of {row['topic'] or row['topic_id']}"
            raise RuntimeError(
                f"{FAILFAST_ERROR}: {row['capture_file']}: {where}"
                f"-{row['partition']} (batch offset {row['batch_offset']}): {row['error']}"
            )


def record_row_size(row: dict) -> int:
    """About how many bytes one of ``record_rows``' rows holds."""
    size = _ROW_OVERHEAD + len(row["key"] or b"") + len(row["value"] or b"")
    for header in row["headers"] or ():
        size += _HEADER_OVERHEAD + len(header["key"] or "") + len(header["value"] or b"")
    return size


def _produce_answers(response: dict | None, names: TopicNames) -> dict:
    """(topic, partition) -> (error code, base offset the broker assigned), from a Produce response."""
    answers = {}
    for topic in (response or {}).get("responses") or ():
        name, topic_id = _topic(topic, names, "name")
        for part in topic.get("partition_responses") or ():
            answers[(name or topic_id, part.get("index"))] = (part.get("error_code") or 0, part.get("base_offset"))
    return answers


def _topic(topic: dict, names: TopicNames, name_field: str):
    topic_id = topic.get("topic_id")
    if topic_id == _ZERO_UUID:
        topic_id = None
    name = topic.get(name_field) or names.name(topic_id)
    return name, topic_id


def _batches(exchange, direction, topic, topic_id, partition, batches, answer=None, aborted=None):
    """``answer``: (error code, assigned base offset) of the partition in the response, None if
    no response was captured. Produced records get the log offsets the broker assigned (its base
    offset plus the record's delta) when it accepted them, else none: the producer's own numbering
    (0, 1, 2... in each batch) looks like log offsets and would join with the wrong fetched
    records. Records it refused name its error."""
    error, log_base = answer if answer is not None else (None, None)
    error_name_ = reported_error(error)
    assigned = direction == "fetch" or (error == 0 and log_base is not None and log_base >= 0)
    shift = 0
    if assigned and direction == "produce":
        # The broker's base offset is that of the first record it appended (in a v2 batch or a
        # legacy wrapper alike): every record moves by the same amount from where the producer put it.
        first = next((r["offset"] for b in batches or () for r in b["records"] if r["offset"] is not None), None)
        shift = log_base - first if first is not None else 0
    columns = _exchange_columns(exchange, direction, topic, topic_id, partition)  # (every batch's)
    for n, batch in enumerate(batches or ()):
        if batch["truncated"]:
            # Cut short inside a whole frame: a Fetch response's last batch, which brokers cut at
            # the size limit. Consumers read none of it (they fetch it again), nor does a broker
            # append what a Produce request cut short; the body keeps it, marked truncated.
            continue
        base = {
            **columns,
            "compression": batch["compression"],
            "batch_offset": batch["base_offset"],
            "producer_id": batch["producer_id"],
            "is_transactional": batch["is_transactional"],
            "is_control": batch["is_control"],
            "is_aborted": aborted[n] if aborted is not None else None,
            "timestampType": _TIMESTAMP_TYPES.get(batch["timestamp_type"], -1),
        }
        batch_crc = batch["crc_valid"]
        for record in batch["records"]:
            row = dict(base)
            ts = record["timestamp"]
            offset = record["offset"]
            crc_valid = record["crc_valid"] if record["crc_valid"] is not None else batch_crc
            row.update(
                key=record["key"],
                value=record["value"],
                offset=None if offset is None or not assigned else offset + shift,
                timestamp=_ms(ts),
                headers=record["headers"],
                crc_valid=crc_valid,
                offset_assigned=assigned,
                error_name=error_name_,
                error=None if crc_valid is not False else CRC_MISMATCH,
            )
            yield row
        if batch["error"]:
            # The records after those read (all of a batch that does not decompress): one row that
            # says why, so that no record disappears without a word.
            yield {
                **base,
                **_UNREAD,
                "crc_valid": batch_crc,
                "offset_assigned": False,
                "error_name": error_name_,
                "error": f"records of this batch could not be read: {batch['error']}",
            }


# A consumer that checks CRCs refuses such a batch (Java's: check.crcs=true, its default,
# CorruptRecordException; librdkafka's only with check.crcs=true, its default being false).
CRC_MISMATCH = (
    "the CRC does not match the bytes it covers: a consumer that checks CRCs refuses this record "
    "(check.crcs: on by default in Java's client, off in librdkafka's); its key, value and headers are "
    "as captured, and may be corrupt"
)

_UNREAD = {"key": None, "value": None, "offset": None, "timestamp": None, "headers": None}


def _ms(ms: int | None) -> datetime | None:
    if ms is None or ms < 0:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
