"""Record batches with magic 2 (DefaultRecordBatch.java, DefaultRecord.java; KIP-98).

Owns the 61-byte batch header, its CRC32C (attributes to end), the attribute bits, and the
record loop: varint length, int8 attributes, zigzag timestamp and offset deltas, nullable
key and value, headers. The loop is the stage's hot path, so varints take an inline
one-byte fast path and records are built as dict literals with no helper calls. Every
claimed length is checked against the bytes of its record before anything is sliced.
Does not walk from batch to batch (see reader) or know codecs (it asks its decompression budget).
"""

import struct

from crc32c import crc32c

from .control import ControlDecoder, decode_control_record
from .errors import RecordsError
from .shapes import UNKNOWN, compression_name, new_batch
from .varint import read_zigzag

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


class OverLimit(Exception):
    """More records than the frame's budget allows (see ``budget``)."""


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


def read_records(  # noqa: C901 - the per-record loop stays inline: a call per key/value costs 5-10%
    buf: bytes,
    pos: int,
    stop: int,
    base_offset: int,
    base_timestamp: int,
    timestamp_override: int | None,
    out: list,
    partial_ok: bool,
    limit: int = 1 << 62,
) -> None:
    """Append the records in buf[pos:stop] to `out` as dicts, `limit` of them at most.

    Raises RecordsError at the first corrupt record, leaving the good ones in `out`. With
    `partial_ok` a record cut by `stop` ends the loop quietly (a truncated batch). Past `limit`
    raises `OverLimit`.
    """
    append = out.append
    try:
        while pos < stop:
            if len(out) >= limit:
                raise OverLimit(len(out))
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = read_zigzag(buf, pos)
            rec_end = pos + length
            if rec_end > stop or length < 6:
                if partial_ok and rec_end > stop:
                    return
                raise RecordsError(f"record {len(out)} claims {length} bytes, {stop - pos} left")
            attributes = buf[pos]
            b = buf[pos + 1]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                timestamp_delta, pos = read_zigzag(buf, pos + 1)
            b = buf[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = read_zigzag(buf, pos)
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                size, pos = read_zigzag(buf, pos)
            if 0 <= size <= rec_end - pos:
                key = buf[pos : pos + size]
                pos += size
            elif size == -1:
                key = None
            else:
                raise _bad_length(len(out), "key", size, rec_end - pos)
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                size, pos = read_zigzag(buf, pos)
            if 0 <= size <= rec_end - pos:
                value = buf[pos : pos + size]
                pos += size
            elif size == -1:
                value = None
            else:
                raise _bad_length(len(out), "value", size, rec_end - pos)
            b = buf[pos]
            headers: list
            if b == 0:
                headers = []
                pos += 1
            else:
                headers, pos = _read_headers(buf, pos, rec_end, len(out))
            if pos != rec_end:
                raise RecordsError(f"record {len(out)} length {length} does not match its content")
            append(
                {
                    "offset": base_offset + offset_delta,
                    "timestamp": (
                        base_timestamp + timestamp_delta if timestamp_override is None else timestamp_override
                    ),
                    "key": key,
                    "value": value,
                    "headers": headers,
                    "attributes": attributes - 256 if attributes > 127 else attributes,
                    "crc": None,
                    "crc_valid": None,
                    "control": None,
                }
            )
    except IndexError as e:
        if partial_ok:
            return
        raise RecordsError(f"record {len(out)} runs past the end of the batch") from e


def _bad_length(index: int, what: str, size: int, left: int) -> RecordsError:
    """The error for a key or value length that is neither -1 (null) nor within the record."""
    if size < 0:
        return RecordsError(f"record {index} has {what} length {size}")
    return RecordsError(f"record {index} {what} claims {size} bytes, {left} left")


def _read_headers(buf: bytes, pos: int, rec_end: int, index: int) -> tuple[list, int]:
    count, pos = read_zigzag(buf, pos)
    # A header takes at least two bytes (two empty lengths): check before looping on it.
    if count < 0 or 2 * count > rec_end - pos:
        raise RecordsError(f"record {index} claims {count} headers, {rec_end - pos} bytes left")
    headers = []
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            size, pos = read_zigzag(buf, pos)
        if size < 0 or size > rec_end - pos:
            raise RecordsError(f"record {index} header key length {size} is invalid")
        name = buf[pos : pos + size].decode("utf-8", "replace")
        pos += size
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            size, pos = read_zigzag(buf, pos)
        if size < 0:
            if size != -1:
                raise RecordsError(f"record {index} header value length {size} is invalid")
            value = None
        elif size > rec_end - pos:
            raise RecordsError(f"record {index} header value claims {size} bytes")
        else:
            value = buf[pos : pos + size]
            pos += size
        headers.append({"key": name, "value": value})
    return headers, pos
