"""Reading one partition: a capture file, or one connection slice of a large one, to Arrow batches.

Shared by the batch and the streaming reader. Runs on executors: parsers are built there on
first use (``decoder_for`` caches them per process) and never shipped.
"""

from __future__ import annotations

import math
import os

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from ..framing import CAPTURE_ERROR, read_capture
from .arrow import BatchBuilder
from .options import ReadOptions
from .records_view import TopicNames, record_rows
from .rows import exchange_row

BATCH_ROWS = 2048
MAX_SPLITS_PER_FILE = 64
MALFORMED_STATUSES = frozenset({"malformed", "gap", CAPTURE_ERROR})
# The records view needs Produce and Fetch, and the responses that name topics by id (from
# every connection, also those another partition of a split capture reads records from).
TOPIC_NAMING_APIS = frozenset({3, 19, 75})
RECORDS_VIEW_APIS = frozenset({0, 1}) | TOPIC_NAMING_APIS


class CapturePartition(InputPartition):
    def __init__(self, path: str, index: int = 0, count: int = 1):
        super().__init__((path, index, count))
        self.path, self.index, self.count = path, index, count


def plan_partitions(files, split_size: int) -> list[CapturePartition]:
    """A partition per file; a file over ``split_size`` bytes is shared by several, by connection."""
    parts = []
    for path in files:
        count = min(MAX_SPLITS_PER_FILE, max(1, math.ceil(os.path.getsize(path) / split_size)))
        parts += [CapturePartition(path, i, count) for i in range(count)]
    return parts


class PartitionReader:
    def __init__(self, options: ReadOptions, schema: StructType, apis=None, window=None):
        self.options, self.schema, self.apis, self.window = options, schema, apis, window

    def read(self, partition: CapturePartition):
        if not partition.path:
            return
        builder = BatchBuilder(self.schema)
        rows = []
        for row in self._rows(partition):
            rows.append(row)
            if len(rows) >= BATCH_ROWS:
                yield builder.build(rows)
                rows = []
        if rows:
            yield builder.build(rows)

    def _rows(self, partition: CapturePartition):
        o = self.options
        records_view = o.view == "records"
        apis = (RECORDS_VIEW_APIS if self.apis is None else self.apis) if records_view else self.apis
        exchanges = read_capture(partition.path, ports=o.ports, detect_kafka=o.detect_kafka,
                                 max_frame_size=o.max_frame_size, max_buffered_bytes=o.max_buffered_bytes,
                                 specs=o.specs, apis=apis, window_ns=self.window,
                                 connection_slice=(partition.index, partition.count),
                                 shared_apis=TOPIC_NAMING_APIS if records_view else None)
        corrupt = o.corrupt_column if o.corrupt_column in self.schema.fieldNames() else None
        names = TopicNames()
        for ex in exchanges:
            if not _of_requested_version(ex, o):
                continue
            if ex.status in MALFORMED_STATUSES:
                if o.mode == "FAILFAST":
                    raise RuntimeError(_failfast_message(ex))
                if o.mode == "DROPMALFORMED":
                    continue
            if records_view:
                names.learn(ex)
                yield from record_rows(ex, names)
            else:
                yield exchange_row(ex, corrupt)


def _of_requested_version(ex, options: ReadOptions) -> bool:
    """With api and apiVersion, rows of the api at other versions are left out (their bodies do
    not fit that version's schema); rows whose version is unknown (capture errors) stay."""
    if options.api_version is None or ex.api_version is None or ex.api_key != options.api_key:
        return True
    return ex.api_version == options.api_version


def _failfast_message(ex) -> str:
    where = [f"packet {ex.request_packet if ex.request_packet is not None else ex.response_packet}"]
    if ex.stream_offset is not None:
        where.append(f"stream byte {ex.stream_offset}")
    if ex.connection_id:
        where.append(f"connection {ex.connection_id}")
    return (f"[MALFORMED_RECORD_IN_PARSING] kafka-wire (mode FAILFAST): {ex.capture_file}: {', '.join(where)}: "
            f"{ex.status}: {ex.error}")
