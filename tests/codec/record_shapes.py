"""franz-go's RecordBatch and Record written as hand-built IR, and the kafka-python side of
decoding them: its varint encoder and its v2 batch builder, the independent source of bytes."""

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import encode_varint

from kafka_protocol_source.spec.ir import ALWAYS_NULLABLE, FieldDef, MessageDef, TypeRef
from kafka_protocol_source.spec.versions import NONE, VersionRange

ALL = VersionRange.parse("0+")
HEADER_SIZE = 61  # a v2 batch header: FirstOffset and Length, then the 49 bytes Length counts


def zigzag(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


def sized(data: bytes | None) -> bytes:
    return zigzag(-1) if data is None else zigzag(len(data)) + data


def field(name: str, type_: str, *, nullable: bool = False, fields=(), length_from=None) -> FieldDef:
    nullable = nullable or type_ in ALWAYS_NULLABLE  # as the krammar front-end writes them
    return FieldDef(
        name,
        TypeRef.parse(type_),
        ALL,
        nullable_versions=ALL if nullable else NONE,
        fields=tuple(fields),
        length_from=length_from,
    )


def message(name: str, *fields: FieldDef, flexible: bool = False) -> MessageDef:
    return MessageDef(
        name=name,
        kind="data",
        api_key=None,
        valid_versions=VersionRange.parse("0"),
        flexible_versions=ALL if flexible else NONE,
        fields=fields,
    )


RECORD_BATCH = message(
    "RecordBatch",
    field("FirstOffset", "int64"),
    field("Length", "int32"),
    field("PartitionLeaderEpoch", "int32"),
    field("Magic", "int8"),
    field("CRC", "int32"),
    field("Attributes", "int16"),
    field("LastOffsetDelta", "int32"),
    field("FirstTimestamp", "int64"),
    field("MaxTimestamp", "int64"),
    field("ProducerID", "int64"),
    field("ProducerEpoch", "int16"),
    field("FirstSequence", "int32"),
    field("NumRecords", "int32"),
    field("Records", "bytes", length_from=("Length", 49)),
)
RECORD = message(
    "Record",
    field("Length", "varint"),
    field("Attributes", "int8"),
    field("TimestampDelta", "varlong"),
    field("OffsetDelta", "varint"),
    field("Key", "varint-bytes"),
    field("Value", "varint-bytes"),
    field("Headers", "varint[]Header", fields=[field("Key", "varint-string"), field("Value", "varint-bytes")]),
)


def build_batch(entries, first_timestamp: int, producer=(-1, -1, -1)) -> bytes:
    """An uncompressed v2 batch; entries are (timestamp delta, key, value, headers)."""
    builder = DefaultRecordBatchBuilder(2, 0, False, *producer, batch_size=1 << 30)
    for offset, (delta, key, value, headers) in enumerate(entries):
        builder.append(offset, first_timestamp + delta, key, value, headers)
    return bytes(builder.build())
