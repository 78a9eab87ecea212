"""The records view: one row per record produced (Produce requests) or fetched (Fetch responses).

Columns follow Spark's own Kafka source (key, value, topic, partition, offset, timestamp,
timestampType, headers) so queries written for it work here, plus where the record was seen.
Newer Produce/Fetch versions name topics by id only (KIP-516); ``TopicNames`` learns id -> name
from the Metadata, CreateTopics and DescribeTopicPartitions responses of the same capture.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..spec.api_keys import FETCH, PRODUCE
from ..views.topic_names import ZERO_UUID as _ZERO_UUID
from ..views.topic_names import TopicNames

_TIMESTAMP_TYPES = {"CreateTime": 0, "LogAppendTime": 1}


def record_rows(exchange, names: TopicNames):
    """Yield one dict per record in the exchange (in the RECORDS_VIEW column order)."""
    if exchange.api_key == PRODUCE and exchange.request:
        for topic in exchange.request.get("topic_data") or ():
            name, topic_id = _topic(topic, names, "name")
            for part in topic.get("partition_data") or ():
                yield from _batches(exchange, "produce", name, topic_id, part.get("index"), part.get("records"))
    elif exchange.api_key == FETCH and exchange.response:
        for topic in exchange.response.get("responses") or ():
            name, topic_id = _topic(topic, names, "topic")
            for part in topic.get("partitions") or ():
                yield from _batches(exchange, "fetch", name, topic_id, part.get("partition_index"), part.get("records"))


def _topic(topic: dict, names: TopicNames, name_field: str):
    topic_id = topic.get("topic_id")
    if topic_id == _ZERO_UUID:
        topic_id = None
    name = topic.get(name_field) or (names.by_id.get(topic_id) if topic_id else None)
    return name, topic_id


def _batches(exchange, direction, topic, topic_id, partition, batches):
    for batch in batches or ():
        compression = batch["compression"]
        base = {
            "topic": topic, "partition": partition, "direction": direction, "client_id": exchange.client_id,
            "client_address": exchange.client_address, "broker_address": exchange.broker_address,
            "request_time": exchange.request_time, "api_version": exchange.api_version,
            "compression": compression, "batch_offset": batch["base_offset"], "producer_id": batch["producer_id"],
            "is_transactional": batch["is_transactional"], "is_control": batch["is_control"],
            "timestampType": _TIMESTAMP_TYPES.get(batch["timestamp_type"], -1),
            "topic_id": topic_id, "capture_file": exchange.capture_file, "connection_id": exchange.connection_id,
        }
        batch_crc = batch["crc_valid"]
        for record in batch["records"]:
            row = dict(base)
            ts = record["timestamp"]
            row.update(key=record["key"], value=record["value"], offset=record["offset"],
                       timestamp=_ms(ts), headers=record["headers"],
                       crc_valid=record["crc_valid"] if record["crc_valid"] is not None else batch_crc)
            yield row


def _ms(ms: int | None) -> datetime | None:
    if ms is None or ms < 0:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
