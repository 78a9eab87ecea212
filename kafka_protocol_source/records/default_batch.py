"""Record batches with magic 2 (DefaultRecordBatch.java; KIP-98).

Owns the 61-byte batch header, its CRC32C (attributes to end) and the attribute bits, and
hands the records to the record loop (default_record). Does not walk from batch to batch
(see reader) or know codecs (it asks its decompression budget).
"""

import struct

from crc32c import crc32c

from .control import ControlDecoder, decode_control_record
from .default_record import OverLimit, read_records
from .errors import RecordsError
from .shapes import UNKNOWN, compression_name, new_batch

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size
# batch_length counts from the partition leader epoch on, so it excludes offset and length.
MIN_BATCH_LENGTH = HEADER_SIZE - 12
_CRC_START = 21

_FIELDS = (
    ("base_offset", 8),
    ("batch_length", 12),
    ("partition_leader_epoch", 16),
    ("magic", 17),
    ("crc", 21),
    ("attributes", 23),
    ("last_offset_delta", 27),
    ("base_timestamp", 35),
    ("max_timestamp", 43),
    ("producer_id", 51),
    ("producer_epoch", 53),
    ("base_sequence", 57),
    ("records_count", 61),
)
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40


def decode_default_batch(
    data: bytes, pos: int, end: int, truncated: bool, budget, decode_control: ControlDecoder | None
) -> dict:
    """Decode the batch at data[pos:end]; `truncated` means its declared end lies beyond."""
    if end - pos < HEADER_SIZE:
        return _partial_header(data, pos, end)
    (
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    ) = HEADER.unpack_from(data, pos)
    codec = attributes & 0x07
    log_append_time = bool(attributes & _TIMESTAMP_TYPE_BIT)
    is_control = bool(attributes & _CONTROL_BIT)
    batch = new_batch(
        base_offset=base_offset,
        batch_length=batch_length,
        partition_leader_epoch=leader_epoch,
        magic=magic,
        crc=crc,
        crc_valid=None if truncated else crc32c(memoryview(data)[pos + _CRC_START : end]) == crc,
        attributes=attributes,
        compression=compression_name(codec),
        timestamp_type="LogAppendTime" if log_append_time else "CreateTime",
        is_transactional=bool(attributes & _TRANSACTIONAL_BIT),
        is_control=is_control,
        has_delete_horizon=bool(attributes & _DELETE_HORIZON_BIT),
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=records_count,
        truncated=truncated,
    )
    records = batch["records"]
    # Kafka gives every record the batch's max timestamp under LogAppendTime.
    timestamp_override = max_timestamp if log_append_time else None
    body = pos + HEADER_SIZE
    try:
        if codec == 0:
            read_records(
                data,
                body,
                end,
                base_offset,
                base_timestamp,
                timestamp_override,
                records,
                truncated,
                budget.records_allowed(),
            )
        elif not truncated:
            payload = budget.decompress(codec, data[body:end])
            read_records(
                payload,
                0,
                len(payload),
                base_offset,
                base_timestamp,
                timestamp_override,
                records,
                False,
                budget.records_allowed(),
            )
        budget.charge_records(len(records))
        if not truncated and len(records) != records_count:
            raise RecordsError(f"record count mismatch: header declares {records_count}, found {len(records)}")
    except OverLimit:
        budget.charge_records(len(records))
        batch["error"] = budget.records_spent()
    except RecordsError as e:
        batch["error"] = str(e)
    if is_control:
        for record in records:
            record["control"] = decode_control_record(record["key"], record["value"], decode_control)
    return batch


def _partial_header(data: bytes, pos: int, end: int) -> dict:
    """A truncated batch whose header itself is cut: keep the fields that are whole."""
    have = end - pos
    values = HEADER.unpack(bytes(data[pos:end]).ljust(HEADER_SIZE, b"\0"))
    fields = {name: value for (name, stop), value in zip(_FIELDS, values, strict=True) if stop <= have}
    fields.setdefault("records_count", UNKNOWN)
    if "attributes" in fields:
        fields["compression"] = compression_name(fields["attributes"] & 0x07)
    return new_batch(truncated=True, **fields)
