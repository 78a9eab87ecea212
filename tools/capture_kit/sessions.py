"""Client sessions against a running broker: admin, produce per codec, a consumer group, offsets.

Each run_* function drives one client library through the same story and returns, for every planned
record, what the broker answered. Failures a broker is known to produce (Tansu's rejection of magic
0/1, the mock cluster's lack of admin APIs) are data here, not crashes: the request bytes are what
the captures are for. Knows nothing about capture files.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from dataclasses import dataclass

from capture_kit.payloads import Outcome, PlannedRecord

log = logging.getLogger("make_captures")

SESSION_TIMEOUT_MS = 6000  # Tansu's JoinGroup waits about half of this
CONSUME_DEADLINE_S = 15.0
# Heartbeats go out every heartbeat.interval.ms (1 s); stay in the group a little longer than that
# after the last record so every capture holds Heartbeat exchanges, not only the join.
HEARTBEAT_DWELL_S = 1.6


def _dwell_until() -> float:
    return time.monotonic() + HEARTBEAT_DWELL_S


@dataclass(frozen=True)
class SessionOptions:
    topic: str
    group: str
    admin: bool = True  # CreateTopics + DescribeConfigs (the mock cluster has neither)
    idempotent: bool = True
    api_version: tuple[int, ...] | None = None  # kafka-python only; None = negotiate via ApiVersions
    consume: bool = True
    retries: int | None = None  # kafka-python legacy runs use 0 so a rejected batch fails at once


def by_codec(records: list[PlannedRecord]) -> dict[str, list[PlannedRecord]]:
    grouped: dict[str, list[PlannedRecord]] = defaultdict(list)
    for record in records:
        grouped[record.codec].append(record)
    return dict(grouped)


def run_confluent_kafka(
    bootstrap: str, records: list[PlannedRecord], opts: SessionOptions
) -> dict[PlannedRecord, Outcome]:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000, "log_level": 3}
    if opts.admin:
        admin = AdminClient({**common, "client.id": "kw-admin"})
        for topic, future in admin.create_topics(
            [NewTopic(opts.topic, 1, 1)], operation_timeout=5, request_timeout=5
        ).items():
            _settle(future, f"create_topics {topic}")
        for resource, future in admin.describe_configs(
            [ConfigResource("topic", opts.topic)], request_timeout=5
        ).items():
            _settle(future, f"describe_configs {resource}")

    outcomes: dict[PlannedRecord, Outcome] = {}
    for codec, batch in by_codec(records).items():
        producer = Producer(
            {
                **common,
                "client.id": f"kw-producer-{codec}",
                "compression.type": codec,
                "enable.idempotence": opts.idempotent,
                "linger.ms": 20,
                "message.timeout.ms": 8000,
            }
        )
        for record in batch:

            def delivered(err, msg, record=record):
                outcomes[record] = Outcome(
                    msg.partition(), msg.offset() if err is None else None, None if err is None else str(err)
                )

            producer.produce(
                record.topic,
                value=record.value,
                key=record.key,
                partition=record.partition,
                headers=list(record.headers) or None,
                on_delivery=delivered,
            )
        left = producer.flush(10)
        if left:
            log.warning("confluent producer %s: %d records undelivered", codec, left)

    if opts.consume:
        consumer = Consumer(
            {
                **common,
                "client.id": "kw-consumer",
                "group.id": opts.group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": 1000,
            }
        )
        consumer.subscribe([opts.topic])
        wanted = sum(1 for o in outcomes.values() if o.error is None)
        seen, deadline = 0, time.monotonic() + CONSUME_DEADLINE_S
        while seen < wanted and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen += 1
        log.info("confluent consumer read %d of %d", seen, wanted)
        dwell = _dwell_until()
        while time.monotonic() < dwell:
            consumer.poll(0.2)
        try:
            consumer.commit(asynchronous=False)
            partition = TopicPartition(opts.topic, 0)
            log.info("committed %s", consumer.committed([partition], timeout=5))
            log.info("watermarks %s", consumer.get_watermark_offsets(partition, timeout=5))
        except KafkaException as e:
            log.warning("confluent offsets: %s", e)
        consumer.close()
    return outcomes


def run_kafka_python(
    bootstrap: str, records: list[PlannedRecord], opts: SessionOptions
) -> dict[PlannedRecord, Outcome]:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    common = {"bootstrap_servers": bootstrap, "request_timeout_ms": 5000}
    if opts.api_version is not None:
        common["api_version"] = opts.api_version
    if opts.admin:
        admin = KafkaAdminClient(client_id="kw-admin", **common)
        try:
            admin.create_topics([NewTopic(opts.topic, 1, 1)])
            admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, opts.topic)])
        except Exception as e:  # noqa: BLE001 - an admin refusal is part of what we record
            log.warning("kafka-python admin: %r", e)
        finally:
            admin.close()

    outcomes: dict[PlannedRecord, Outcome] = {}
    for codec, batch in by_codec(records).items():
        extra = {"retries": opts.retries} if opts.retries is not None else {}
        producer = KafkaProducer(
            client_id=f"kw-producer-{codec}",
            compression_type=None if codec == "none" else codec,
            enable_idempotence=opts.idempotent,
            linger_ms=20,
            max_block_ms=5000,
            delivery_timeout_ms=10000,
            **extra,
            **common,
        )
        futures = [
            (
                record,
                producer.send(
                    record.topic,
                    value=record.value,
                    key=record.key,
                    partition=record.partition,
                    headers=list(record.headers) or None,
                ),
            )
            for record in batch
        ]
        for record, future in futures:
            try:
                meta = future.get(timeout=12)
                outcomes[record] = Outcome(meta.partition, meta.offset, None)
            except Exception as e:  # noqa: BLE001 - a rejected record is still on the wire
                outcomes[record] = Outcome(record.partition, None, repr(e))
        try:
            producer.close(timeout=3)
        except Exception as e:  # noqa: BLE001 - kafka-python raises from close() when a batch never completed
            log.warning("kafka-python producer %s close: %r", codec, e)

    if opts.consume:
        consumer = KafkaConsumer(
            opts.topic,
            client_id="kw-consumer",
            group_id=opts.group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=1000,
            **{**common, "request_timeout_ms": SESSION_TIMEOUT_MS + 1000},
        )
        wanted = sum(1 for o in outcomes.values() if o.error is None)
        seen, deadline = 0, time.monotonic() + CONSUME_DEADLINE_S
        while seen < wanted and time.monotonic() < deadline:
            seen += sum(len(msgs) for msgs in consumer.poll(timeout_ms=500).values())
        log.info("kafka-python consumer read %d of %d", seen, wanted)
        dwell = _dwell_until()
        while time.monotonic() < dwell:
            consumer.poll(timeout_ms=200)
        partition = TopicPartition(opts.topic, 0)
        try:
            consumer.commit()
            log.info("committed %s", consumer.committed(partition))
            log.info("end offsets %s", consumer.end_offsets([partition]))
            log.info("beginning offsets %s", consumer.beginning_offsets([partition]))
        except Exception as e:  # noqa: BLE001
            log.warning("kafka-python offsets: %r", e)
        consumer.close()
    return outcomes


def run_aiokafka(bootstrap: str, records: list[PlannedRecord], opts: SessionOptions) -> dict[PlannedRecord, Outcome]:
    return asyncio.run(_aiokafka_session(bootstrap, records, opts))


async def _aiokafka_session(
    bootstrap: str, records: list[PlannedRecord], opts: SessionOptions
) -> dict[PlannedRecord, Outcome]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    from aiokafka.errors import KafkaError

    common = {"bootstrap_servers": bootstrap, "request_timeout_ms": 5000}
    if opts.admin:
        admin = AIOKafkaAdminClient(client_id="kw-admin", **common)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(opts.topic, 1, 1)])
            await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, opts.topic)])
        except KafkaError as e:
            log.warning("aiokafka admin: %r", e)
        finally:
            await admin.close()

    outcomes: dict[PlannedRecord, Outcome] = {}
    idempotent = opts.idempotent
    for codec, batch in by_codec(records).items():
        producer = AIOKafkaProducer(
            client_id=f"kw-producer-{codec}",
            compression_type=None if codec == "none" else codec,
            enable_idempotence=idempotent,
            linger_ms=20,
            **common,
        )
        try:
            await producer.start()
        except KafkaError as e:
            # Tansu answers aiokafka's InitProducerId with an error; keep that exchange, go on without it.
            log.warning("aiokafka idempotent producer refused (%r); continuing non-idempotent", e)
            await producer.stop()
            idempotent = False
            producer = AIOKafkaProducer(
                client_id=f"kw-producer-{codec}",
                compression_type=None if codec == "none" else codec,
                enable_idempotence=False,
                linger_ms=20,
                **common,
            )
            await producer.start()
        try:
            futures = [
                (
                    record,
                    await producer.send(
                        record.topic,
                        value=record.value,
                        key=record.key,
                        partition=record.partition,
                        headers=list(record.headers) or None,
                    ),
                )
                for record in batch
            ]
            for record, future in futures:
                try:
                    meta = await future
                    outcomes[record] = Outcome(meta.partition, meta.offset, None)
                except KafkaError as e:
                    outcomes[record] = Outcome(record.partition, None, repr(e))
        finally:
            await producer.stop()

    if opts.consume:
        consumer = AIOKafkaConsumer(
            opts.topic,
            client_id="kw-consumer",
            group_id=opts.group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=1000,
            **common,
        )
        await consumer.start()
        try:
            wanted = sum(1 for o in outcomes.values() if o.error is None)
            seen, deadline = 0, time.monotonic() + CONSUME_DEADLINE_S
            while seen < wanted and time.monotonic() < deadline:
                seen += sum(len(msgs) for msgs in (await consumer.getmany(timeout_ms=500)).values())
            log.info("aiokafka consumer read %d of %d", seen, wanted)
            dwell = _dwell_until()
            while time.monotonic() < dwell:
                await consumer.getmany(timeout_ms=200)
            partition = TopicPartition(opts.topic, 0)
            await consumer.commit()
            log.info("committed %s", await consumer.committed(partition))
            log.info("end offsets %s", await consumer.end_offsets([partition]))
        finally:
            await consumer.stop()
    return outcomes


def _settle(future, what: str) -> None:
    try:
        log.info("%s -> %s", what, future.result(timeout=8))
    except Exception as e:  # noqa: BLE001 - e.g. "topic already exists"; the exchange is what we keep
        log.warning("%s failed: %r", what, e)
