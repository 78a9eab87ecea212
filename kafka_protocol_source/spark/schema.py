"""Spark schemas: the three views, and typed request/response structs inferred from the specs.

``typed_body_type(registry, message, versions)`` maps the IR to a StructType: the union of the
fields of every given version (a field absent at a row's version is null), names as decoded
(snake_case), int8/16/32/64 -> byte/short/int/long, uint16 -> int, uint32 -> long, uuid ->
string, bytes -> binary (krammar's varint/varlong/varint-string/varint-bytes likewise: int, long,
string, binary), records -> array of batch structs with their records, and each flexible
struct's unknown tagged fields -> map<int, binary>. Embedded structures the decoder adds
(consumer protocol data, Envelope contents) appear beside the bytes they come from.
Deterministic: the same specs give the same schema, field order following the specs.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from ..spec.ir import Struct
from ..spec.registry import SpecRegistry

JSON_FIELD = {"kafka_wire": "json"}  # a nested structure of no fixed shape, rendered as a JSON string

_PRIMITIVE = {
    "bool": BooleanType(),
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "uint16": IntegerType(),
    "uint32": LongType(),
    "float64": DoubleType(),
    "string": StringType(),
    "uuid": StringType(),
    "bytes": BinaryType(),
    "varint": IntegerType(),
    "varlong": LongType(),
    "varint-string": StringType(),
    "varint-bytes": BinaryType(),
}
_WIDER: list[DataType] = [ByteType(), ShortType(), IntegerType(), LongType()]

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
CONTROL_TYPE = StructType(
    [
        StructField("type", IntegerType()),
        StructField("type_name", StringType()),
        StructField("version", IntegerType()),
        StructField("data", StringType(), metadata=JSON_FIELD),  # the KRaft control data message, as JSON
        StructField("error", StringType()),
    ]
)
RECORD_TYPE = StructType(
    [
        StructField("offset", LongType()),
        StructField("timestamp", LongType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("headers", ArrayType(HEADER_TYPE)),
        StructField("attributes", IntegerType()),
        StructField("crc", LongType()),
        StructField("crc_valid", BooleanType()),
        StructField("control", CONTROL_TYPE),
    ]
)
BATCH_TYPE = StructType(
    [
        StructField("base_offset", LongType()),
        StructField("batch_length", IntegerType()),
        StructField("partition_leader_epoch", IntegerType()),
        StructField("magic", ByteType()),
        StructField("crc", LongType()),
        StructField("crc_valid", BooleanType()),
        StructField("attributes", ShortType()),
        StructField("compression", StringType()),
        StructField("timestamp_type", StringType()),
        StructField("is_transactional", BooleanType()),
        StructField("is_control", BooleanType()),
        StructField("has_delete_horizon", BooleanType()),
        StructField("last_offset_delta", IntegerType()),
        StructField("base_timestamp", LongType()),
        StructField("max_timestamp", LongType()),
        StructField("producer_id", LongType()),
        StructField("producer_epoch", ShortType()),
        StructField("base_sequence", IntegerType()),
        StructField("records_count", IntegerType()),
        StructField("records", ArrayType(RECORD_TYPE)),
        StructField("truncated", BooleanType()),
        StructField("error", StringType()),
    ]
)
UNKNOWN_TAGS = StructField("unknown_tagged_fields", MapType(IntegerType(), BinaryType()))

EXCHANGE_FIELDS = [
    StructField("capture_file", StringType()),
    StructField("connection_id", StringType()),
    StructField("client_address", StringType()),
    StructField("broker_address", StringType()),
    StructField("request_time", TimestampType()),
    StructField("response_time", TimestampType()),
    StructField("latency_ms", DoubleType()),
    StructField("api_key", ShortType()),
    StructField("api_name", StringType()),
    StructField("api_version", ShortType()),
    StructField("correlation_id", IntegerType()),
    StructField("client_id", StringType()),
    StructField("request_size", IntegerType()),
    StructField("response_size", IntegerType()),
    StructField("status", StringType()),
    StructField("error", StringType()),
    StructField("note", StringType()),
    StructField("request_packet", LongType()),
    StructField("response_packet", LongType()),
    StructField("response_file", StringType()),
    StructField("error_codes", ArrayType(ShortType())),
    StructField("error_names", ArrayType(StringType())),
    StructField("outcome", StringType()),
]

RECORDS_VIEW = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField("headers", ArrayType(HEADER_TYPE)),
        StructField("direction", StringType()),
        StructField("client_id", StringType()),
        StructField("client_address", StringType()),
        StructField("broker_address", StringType()),
        StructField("request_time", TimestampType()),
        StructField("response_time", TimestampType()),
        StructField("api_version", ShortType()),
        StructField("compression", StringType()),
        StructField("batch_offset", LongType()),
        StructField("producer_id", LongType()),
        StructField("is_transactional", BooleanType()),
        StructField("is_control", BooleanType()),
        # fetched records: in a transaction the Fetch response lists as aborted (a read_committed
        # consumer drops them); null for produced ones and read_uncommitted fetches (nothing is listed)
        StructField("is_aborted", BooleanType()),
        StructField("crc_valid", BooleanType()),
        StructField("topic_id", StringType()),
        StructField("capture_file", StringType()),
        StructField("connection_id", StringType()),
        # produced records: whether ``offset`` is the log offset the broker assigned (else it is null:
        # no response captured, acks=0, or refused); error_name: the partition's error in the response
        # (the broker refused a produced batch, or a fetch of the partition failed)
        StructField("offset_assigned", BooleanType()),
        StructField("error_name", StringType()),
        # a row of records that could not be read (a batch that does not decompress, a record cut
        # inside a whole batch): why; key, value, offset, timestamp and headers are null there
        StructField("error", StringType()),
    ]
)

# Embedded structures (codec/embedded.py): (message, path of the struct holding the bytes) -> (field, data message)
_CONSUMER_DATA = {
    ("JoinGroupRequest", ("protocols",)): ("metadata", "ConsumerProtocolSubscription"),
    ("JoinGroupResponse", ("members",)): ("metadata", "ConsumerProtocolSubscription"),
    ("SyncGroupRequest", ("assignments",)): ("assignment", "ConsumerProtocolAssignment"),
    ("SyncGroupResponse", ()): ("assignment", "ConsumerProtocolAssignment"),
    ("EnvelopeRequest", ()): ("request_principal", "DefaultPrincipalData"),
}
_JSON_DATA = {("EnvelopeRequest", ()): "request_data", ("EnvelopeResponse", ()): "response_data"}


def exchange_schema(bodies: tuple[StructType, StructType] | None = None) -> StructType:
    """The exchange view; ``bodies`` are the typed request and response structs (None: VARIANT bodies)."""
    request, response = bodies if bodies is not None else (VariantType(), VariantType())
    return StructType([*EXCHANGE_FIELDS, StructField("request", request), StructField("response", response)])


def typed_body_type(registry: SpecRegistry, name: str, versions) -> StructType:
    result: StructType | None = None
    for v in versions:
        struct = _struct_type(registry.resolved(name, v), registry, name, ())
        result = struct if result is None else _merge_structs(result, struct)
    return result or StructType([])


def _struct_type(struct: Struct, registry: SpecRegistry, message: str, path: tuple) -> StructType:
    fields = [
        StructField(f.name, _field_type(f, registry, message, (*path, f.name)))
        for f in (*struct.fields, *struct.tagged)
    ]
    if struct.flexible:
        fields.append(UNKNOWN_TAGS)
    embedded = _CONSUMER_DATA.get((message, path))
    if embedded:
        raw, data_name = embedded
        data = registry.message(data_name)
        decoded = typed_body_type(registry, data_name, data.valid_versions.versions())
        fields += [
            StructField(f"{raw}_decoded", StructType([StructField("version", ShortType()), *decoded.fields])),
            StructField(f"{raw}_error", StringType()),
        ]
    json_field = _JSON_DATA.get((message, path))
    if json_field:
        fields += [
            StructField(f"{json_field}_decoded", StringType(), metadata=JSON_FIELD),
            StructField(f"{json_field}_error", StringType()),
        ]
    return StructType(fields)


def _field_type(field, registry, message, path) -> DataType:
    if field.kind == "array":
        element = field.element
        inner = _struct_type(element, registry, message, path) if isinstance(element, Struct) else _PRIMITIVE[element]
        return ArrayType(inner)
    if field.kind == "struct":
        return _struct_type(field.struct, registry, message, path)
    if field.kind == "records":
        return ArrayType(BATCH_TYPE)
    return _PRIMITIVE[field.kind]


def _merge_structs(a: StructType, b: StructType) -> StructType:
    merged = _merge(a, b)
    assert isinstance(merged, StructType), "two structs merge into a struct"
    return merged


def _merge(a: DataType, b: DataType) -> DataType:
    if a == b:
        return a
    if isinstance(a, StructType) and isinstance(b, StructType):
        fields = {f.name: f for f in a.fields}
        order = [f.name for f in a.fields] + [f.name for f in b.fields if f.name not in fields]
        for f in b.fields:
            fields[f.name] = StructField(f.name, _merge(fields[f.name].dataType, f.dataType)) if f.name in fields else f
        return StructType([fields[n] for n in order])
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(_merge(a.elementType, b.elementType))
    if a in _WIDER and b in _WIDER:
        return a if _WIDER.index(a) >= _WIDER.index(b) else b
    raise ValueError(
        f"a field changes type across versions ({a.simpleString()} vs {b.simpleString()}); "
        "read that api with apiVersion set to one version"
    )
