"""The ``kafka-wire`` Python data source: batch reads of captures as exchanges or records.

The driver parses options, expands paths and plans partitions: one per file, and captures
larger than ``splitSize`` are shared by several partitions, each taking the TCP connections that
hash to it, so one big capture also uses every core while connections stay whole. Executors
read with ``read_capture`` (parsers built lazily there, cached per process) and yield Arrow
batches. A pushdown reader (api_key / api_name / request_time filters go into the capture reader,
so other exchanges are never decoded) is written and tested but not handed to Spark yet: see
``KafkaWirePushdownReader``.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import BinaryType, MapType, StringType, StructField, StructType

from ..codec.decoder import decoder_for
from ..views.topic_names import TOPIC_NAMES, names_topics_by_id
from .options import OptionError, ReadOptions
from .partition_reader import CapturePartition, PartitionReader, plan_partitions
from .paths import expand
from .schema import RECORDS_VIEW, exchange_schema, typed_body_type
from .user_schema import check_user_schema
from .view_readers import WHOLE_SESSION_VIEWS
from .view_schemas import VIEW_SCHEMAS

# Each topic id a row's bodies hold, to its name (typed views of apis that name topics by id,
# and the exchanges view with the topicNames option).
TOPIC_NAMES_FIELD = StructField(TOPIC_NAMES, MapType(StringType(), StringType()))

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
        check_user_schema(schema, readable_schema(options), options.view)
        return KafkaWireReader(options, schema)

    def streamReader(self, schema: StructType):
        from .stream import KafkaWireStreamReader  # noqa: PLC0415 - only streaming queries need it

        options = ReadOptions.parse(self.options)
        if options.view in VIEW_SCHEMAS:
            raise OptionError(
                f"view={options.view} summarises whole captures and is read in batch only "
                "(spark.read, not spark.readStream)"
            )
        check_user_schema(schema, readable_schema(options), options.view)
        return KafkaWireStreamReader(options, schema)


def readable_schema(options: ReadOptions) -> StructType:
    """Every column a read with ``options`` can give: its default schema, and the columns a
    schema may ask for by naming them, ``topic_names`` (the names of a body's topic ids) and the
    corrupt-record column (exchanges and typed views)."""
    schema = default_schema(options)
    if options.view != "exchanges":
        return schema
    extra = [TOPIC_NAMES_FIELD, StructField(options.corrupt_column, BinaryType())]
    return StructType([*schema.fields, *(f for f in extra if f.name not in schema.fieldNames())])


def default_schema(options: ReadOptions) -> StructType:
    if options.view in VIEW_SCHEMAS:
        return VIEW_SCHEMAS[options.view]
    if options.view == "records":
        schema = RECORDS_VIEW
    elif options.api_key is None:
        schema = exchange_schema()
        if options.topic_names:
            schema = StructType([*schema.fields, TOPIC_NAMES_FIELD])
    else:
        registry = decoder_for(options.specs).registry
        request, response = registry.request(options.api_key), registry.response(options.api_key)
        if request is None or response is None:
            # The definitions in use lack this api: its rows come as unknown_api, with no typed fields.
            schema = exchange_schema((StructType([]), StructType([])))
        else:
            versions = (
                [options.api_version] if options.api_version is not None else list(request.valid_versions.versions())
            )
            schema = exchange_schema(
                (
                    typed_body_type(registry, request.name, versions),
                    typed_body_type(registry, response.name, [v for v in versions if v in response.valid_versions]),
                )
            )
            if names_topics_by_id(registry, options.api_key, versions):
                schema = StructType([*schema.fields, TOPIC_NAMES_FIELD])
    if options.corrupt_requested and options.view == "exchanges":
        schema = StructType([*schema.fields, StructField(options.corrupt_column, BinaryType())])
    return schema


class KafkaWireReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = options
        self.schema = schema
        self.files = expand(options.paths, options.recursive, options.glob_filter)
        self.apis = options.apis
        self.window: tuple[int | None, int | None] | None = None

    def partitions(self):
        o = self.options
        split_size = sys.maxsize if o.view in WHOLE_SESSION_VIEWS else o.split_size  # never split: see view_readers
        # Each slice is given only its own connections' records (the records and lag views learn
        # other connections' topic names from a naming read: see naming_pass).
        parts = plan_partitions(self.files, split_size, o.stitch, o.stitch_tolerance_ns, index=True)
        return parts or [CapturePartition((), 0, 0)]

    def read(self, partition: InputPartition):
        assert isinstance(partition, CapturePartition), "partitions() gives CapturePartitions only"
        yield from PartitionReader(self.options, self.schema, self.apis, self.window).read(partition)


def _to_ns(value) -> int | None:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return int(value.timestamp() * 1_000_000) * 1000
    return None


class KafkaWirePushdownReader(KafkaWireReader):
    """A reader that takes api and request-time filters and skips decoding other exchanges.

    Not handed to Spark yet, for two reasons outside this project. Spark 4.3 keeps the read planned
    during pushdown on the data source instance (PythonDataSourceV2.readInfo) that every scan of
    one DataFrame shares, so a later scan of that DataFrame (a union branch, or ``df.count()``
    after ``df.where(...).count()``) reads with an earlier scan's pushed filter and returns wrong
    rows (tests/spark/test_pushdown.py, test_reused_dataframe_pushdown_stale_read_info); Spark's
    master keeps it per scan (PythonScanBuilder.readInfo). And PySpark refuses any reader with
    ``pushFilters`` when spark.sql.python.filterPushdown.enabled is false (its default), without
    telling ``DataSource.reader`` the setting. Once a release fixes the first and passes the
    second, ``reader`` returns this class when pushdown is on; tests/spark/test_pushdown_reader.py
    keeps it correct meanwhile.
    """

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
