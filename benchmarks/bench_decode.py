"""Decode throughput of the protocol core: compiled vs interpreted parsers, next to kio.

    python benchmarks/bench_decode.py [--seconds 1.0]

Three messages, each encoded by kio (an independent codec) with records from kafka-python's
batch builder: a small Metadata v12 request, a Produce v9 request carrying one batch of 1,000
records, and a Fetch v12 response with three partitions of 300 records. For each we measure
messages/s of our ``decode_request``/``decode_response`` with compiled parsers (the default)
and with interpreted ones, and kio's body reader on the same bytes. kio leaves ``records`` as
raw bytes, so for the record-carrying messages a second peer row adds kafka-python's record
reader (iterating every record) to kio's time: the same work ours does.
Figures are ratios measured in one run, never compared across machines.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import io
import struct
import time
import uuid

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import response as fetch12
from kio.schema.metadata.v12 import request as metadata12
from kio.schema.produce.v9 import request as produce9
from kio.serial import entity_reader, entity_writer

from kafka_protocol_source import Decoder, decoder_for


def records_batch(count: int, base_offset: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i in range(count):
        builder.append(
            i, timestamp=1_700_000_000_000 + i, key=b"key-%d" % i, value=b"v" * 100, headers=[("trace", b"abc")]
        )
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def kio_bytes(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def request_frame(api_key: int, version: int, body: bytes, flexible: bool) -> bytes:
    header = struct.pack(">hhih", api_key, version, 1, 5) + b"bench" + (b"\x00" if flexible else b"")
    return header + body


def cases():
    metadata = metadata12.MetadataRequest(
        topics=tuple(metadata12.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=f"topic-{i}") for i in range(3)),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    produce = produce9.ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=datetime.timedelta(milliseconds=1000),
        topic_data=(
            produce9.TopicProduceData(
                name="orders", partition_data=(produce9.PartitionProduceData(index=0, records=records_batch(1000)),)
            ),
        ),
    )
    fetch = fetch12.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        session_id=0,
        responses=(
            fetch12.FetchableTopicResponse(
                topic="orders",
                partitions=tuple(
                    fetch12.PartitionData(
                        partition_index=p,
                        error_code=ErrorCode.none,
                        high_watermark=300,
                        last_stable_offset=300,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=records_batch(300),
                    )
                    for p in range(3)
                ),
            ),
        ),
    )
    return [
        ("Metadata v12 request", metadata, request_frame(3, 12, kio_bytes(metadata), True), None, 0),
        ("Produce v9 request, 1000 records", produce, request_frame(0, 9, kio_bytes(produce), True), None, 1000),
        ("Fetch v12 response, 3x300 records", fetch, struct.pack(">i", 1) + b"\x00" + kio_bytes(fetch), (1, 12), 900),
    ]


def rate(fn, seconds: float) -> float:
    fn()
    count, start = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return count / elapsed


def kafka_python_records(entity):
    def walk(value):
        if isinstance(value, tuple):
            for v in value:
                yield from walk(v)
        elif hasattr(value, "__dataclass_fields__"):
            for name in value.__dataclass_fields__:
                v = getattr(value, name)
                if name == "records" and v:
                    yield v
                else:
                    yield from walk(v)

    blobs = list(walk(entity))
    return lambda: [list(DefaultRecordBatch(blob)) for blob in blobs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    compiled, interpreted = decoder_for(), Decoder(decoder_for().registry, compiled=False)
    rows = []
    for label, entity, frame, response, nrecords in cases():
        if response:
            ours = functools.partial(compiled.decode_response, frame, *response)
            slow = functools.partial(interpreted.decode_response, frame, *response)
            body = frame[5:]
        else:
            ours = functools.partial(compiled.decode_request, frame)
            slow = functools.partial(interpreted.decode_request, frame)
            body = frame[struct.unpack_from(">h", frame, 8)[0] + 10 + 1 :]
        read = entity_reader(type(entity))

        def kio(b=body, r=read):
            return r(b, 0)

        r_compiled, r_interp, r_kio = rate(ours, args.seconds), rate(slow, args.seconds), rate(kio, args.seconds)
        row = [label, r_compiled, r_interp, r_kio, None]
        if nrecords:
            records = kafka_python_records(entity)
            r_records = rate(records, args.seconds)
            row[4] = 1 / (1 / r_kio + 1 / r_records)
        rows.append(row)
    print(
        f"{'message':36} {'compiled msg/s':>15} {'interp. msg/s':>14} {'compiled/interp':>15} "
        f"{'kio msg/s':>10} {'ours/kio':>9} {'kio+kp records':>15} {'ours/that':>10}"
    )
    for label, c, i, k, kr in rows:
        tail = f"{kr:15.0f} {c / kr:10.2f}" if kr else f"{'-':>15} {'-':>10}"
        print(f"{label:36} {c:15.0f} {i:14.0f} {c / i:15.2f} {k:10.0f} {c / k:9.2f} {tail}")


if __name__ == "__main__":
    main()
