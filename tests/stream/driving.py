"""The stream reader driven without Spark: a reader following a folder, micro-batches run until
its offset stops moving, and the check that every exchange answered came out once."""

from __future__ import annotations

from collections import Counter

from pyspark.sql.streaming.datasource import ReadMaxFiles

from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.spark.stream import KafkaWireStreamReader
from tests.samples.catalog import sample

from .rotated_pieces import exchange_key


def drive(reader, options, offset, rows, limit=None):
    """Micro-batches (of one file each, or as ``limit`` says) until the offset stops moving; their
    rows are added to ``rows``."""
    while (end := reader.latestOffset(offset, limit or ReadMaxFiles(1))) != offset:
        rows += [ex for p in reader.partitions(offset, end) for ex in PartitionReader(options, reader.schema)._rows(p)]
        offset = end
    return offset


def stream_reader(folder, name, **extra):
    raw = {"path": str(folder), "ports": str(sample(name).broker_port), **extra}
    options = ReadOptions.parse(raw)
    return KafkaWireStreamReader(options, default_schema(options)), options


def watching(folder, name, ok_if_there=False, **extra):
    """A stream reader following ``folder`` (made empty, unless ``ok_if_there``), from its first
    offset, with no rows yet; the folder is quiet only once a test says so."""
    folder.mkdir(exist_ok=ok_if_there)
    reader, options = stream_reader(folder, name, **{"quietTimeout": "3600", **extra})
    return reader, options, reader.initialOffset(), []


def ok_rows_once(rows, whole) -> bool:
    return Counter(exchange_key(r) for r in rows if r.status == "ok") == Counter(
        {key: n for key, n in whole.items() if key[-1] == "ok"}
    )


def finish(reader, options, offset, rows):
    reader.quiet_ns = 0  # the folder is quiet: what is open is given up
    return drive(reader, options, offset, rows)
