"""The ``kafka-wire`` Python data source: batch reads of captures as exchanges or records.

The driver parses options, expands paths and plans partitions: one per file, and captures
larger than ``splitSize`` are shared by several partitions, each taking the TCP connections that
hash to it, so one big capture also uses every core while connections stay whole. Executors
read with ``read_capture`` (parsers built lazily there, cached per process) and yield Arrow
batches. Filters on api_key / api_name / request_time are pushed into the capture reader so
bodies of other exchanges are never decoded.
"""

from __future__ import annotations

import math
import os
import sys
from datetime import datetime, timezone

from pyspark.sql.datasource import (DataSource, DataSourceReader, EqualTo, GreaterThan, GreaterThanOrEqual, In,
                                    InputPartition, LessThan, LessThanOrEqual)
from pyspark.sql.types import BinaryType, StructField, StructType

from ..codec.decoder import decoder_for
from ..framing import CAPTURE_ERROR, read_capture
from .arrow import BatchBuilder
from .options import ReadOptions
from .paths import expand
from .records_view import TopicNames, record_rows
from .rows import exchange_row
from .schema import RECORDS_VIEW, exchange_schema, typed_body_type

BATCH_ROWS = 2048
MAX_SPLITS_PER_FILE = 64
MALFORMED_STATUSES = frozenset({"malformed", "gap", CAPTURE_ERROR})
_DAY_NS = 86_400 * 10**9


class KafkaWireDataSource(DataSource):
    """``spark.read.format("kafka-wire").load(path)``: Kafka traffic in captures, as tables."""

    @classmethod
    def name(cls) -> str:
        return "kafka-wire"

    def schema(self) -> StructType:
        return default_schema(ReadOptions.parse(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = ReadOptions.parse(self.options)
        if _pushdown_disabled():
            return KafkaWireReader(options, schema)
        return KafkaWirePushdownReader(options, schema)


def _pushdown_disabled() -> bool:
    """Whether Spark is planning this read with filter pushdown switched off.

    PySpark refuses a reader that implements ``pushFilters`` when
    spark.sql.python.filterPushdown.enabled is false (DATA_SOURCE_PUSHDOWN_DISABLED, raised in
    pyspark/sql/worker/plan_data_source_read.py) and tells the reader nothing about that setting,
    except through the ``enable_pushdown`` local of the worker function calling us. So look
    there: a reader without pushFilters is returned then, and reads never fail for that reason.
    """
    frame = sys._getframe(1)
    for _ in range(8):
        frame = frame.f_back
        if frame is None:
            return False
        if frame.f_locals.get("enable_pushdown") is False:
            return True
    return False


def default_schema(options: ReadOptions) -> StructType:
    if options.view == "records":
        schema = RECORDS_VIEW
    elif options.api_key is None:
        schema = exchange_schema()
    else:
        registry = decoder_for(options.specs).registry
        request, response = registry.request(options.api_key), registry.response(options.api_key)
        versions = [options.api_version] if options.api_version is not None else list(request.valid_versions.versions())
        schema = exchange_schema((typed_body_type(registry, request.name, versions),
                                  typed_body_type(registry, response.name,
                                                  [v for v in versions if v in response.valid_versions])))
    if options.corrupt_requested and options.view == "exchanges":
        schema = StructType(schema.fields + [StructField(options.corrupt_column, BinaryType())])
    return schema


class CapturePartition(InputPartition):
    def __init__(self, path: str, index: int = 0, count: int = 1):
        super().__init__((path, index, count))
        self.path, self.index, self.count = path, index, count


class KafkaWireReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = options
        self.schema = schema
        self.files = expand(options.paths, options.recursive, options.glob_filter)
        self.apis = options.apis
        self.window: tuple[int | None, int | None] | None = None

    # -- planning (driver) ------------------------------------------------------------

    def partitions(self):
        parts = []
        for path in self.files:
            size = os.path.getsize(path)
            count = min(MAX_SPLITS_PER_FILE, max(1, math.ceil(size / self.options.split_size)))
            parts += [CapturePartition(path, i, count) for i in range(count)]
        return parts or [CapturePartition("", 0, 0)]

    # -- reading (executors) ----------------------------------------------------------

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
        exchanges = read_capture(partition.path, ports=o.ports, detect_kafka=o.detect_kafka,
                                 max_frame_size=o.max_frame_size, max_buffered_bytes=o.max_buffered_bytes,
                                 specs=o.specs, apis=self._apis_to_decode(), window_ns=self.window,
                                 connection_slice=(partition.index, partition.count))
        corrupt = o.corrupt_column if o.corrupt_column in self.schema.fieldNames() else None
        names = TopicNames()
        for ex in exchanges:
            if ex.status in MALFORMED_STATUSES:
                if o.mode == "FAILFAST":
                    raise RuntimeError(_failfast_message(ex))
                if o.mode == "DROPMALFORMED":
                    continue
            if o.view == "records":
                names.learn(ex)
                yield from record_rows(ex, names)
                continue
            yield exchange_row(ex, corrupt)

    def _apis_to_decode(self):
        if self.options.view == "records":
            return frozenset({0, 1, 3, 19, 75}) if self.apis is None else self.apis
        return self.apis


def _to_ns(value) -> int | None:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return int(value.timestamp() * 1_000_000) * 1000
    return None


def _failfast_message(ex) -> str:
    where = [f"packet {ex.request_packet if ex.request_packet is not None else ex.response_packet}"]
    if ex.stream_offset is not None:
        where.append(f"stream byte {ex.stream_offset}")
    if ex.connection_id:
        where.append(f"connection {ex.connection_id}")
    return (f"[MALFORMED_RECORD_IN_PARSING] kafka-wire (mode FAILFAST): {ex.capture_file}: {', '.join(where)}: "
            f"{ex.status}: {ex.error}")


class KafkaWirePushdownReader(KafkaWireReader):
    """The reader when filter pushdown is on: api filters are applied before any decoding."""

    def pushFilters(self, filters):
        registry = decoder_for(self.options.specs).registry
        for f in filters:
            if not self._push(f, registry):
                yield f

    def _push(self, f, registry) -> bool:
        if self.options.view != "exchanges" or len(f.attribute) != 1:
            return False
        column = f.attribute[0]
        if column in ("api_key", "api_name") and isinstance(f, (EqualTo, In)):
            values = [f.value] if isinstance(f, EqualTo) else list(f.value)
            keys = set()
            for v in values:
                key = v if column == "api_key" else registry.api_key_by_name(str(v))
                if key is not None and isinstance(key, int):
                    keys.add(key)
            if column == "api_name":  # names are matched exactly by Spark; keep only exact ones
                keys = {k for k in keys if registry.api_name(k) in values}
            self.apis = frozenset(keys) if self.apis is None else self.apis & keys
            return True
        if column == "request_time" and isinstance(f, (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
            # Used only to skip decoding: widened by a day (timestamp literals may arrive in the
            # session's time zone), and handed back so that Spark still applies it exactly.
            ns = _to_ns(f.value)
            if ns is not None:
                low, high = self.window or (None, None)
                if isinstance(f, (GreaterThan, GreaterThanOrEqual)):
                    low = ns - _DAY_NS if low is None else max(low, ns - _DAY_NS)
                else:
                    high = ns + _DAY_NS if high is None else min(high, ns + _DAY_NS)
                self.window = (low, high)
        return False
