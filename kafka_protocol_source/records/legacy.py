"""Message sets with magic 0 and 1 (LegacyRecord.java, AbstractLegacyRecordBatch.java).

Owns the legacy message layout (offset, size, CRC32 over magic to end, magic, attributes,
timestamp for magic 1, int32-length key and value) and compressed wrapper messages, whose
value is a nested message set. Each top-level message is reported as one batch. Does not
walk the top-level set (see reader).
"""

import struct
import zlib

from .default_record import OverLimit
from .errors import RecordsError
from .shapes import compression_name, legacy_record, new_batch

_PREFIX = struct.Struct(">qiIbb")
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_CRC_START = 16
LOG_OVERHEAD = 12
# crc, magic, attributes, [timestamp], key length, value length
MIN_MESSAGE_SIZE = {0: 14, 1: 22}
_TIMESTAMP_TYPE_BIT = 0x08


def decode_legacy_message(data: bytes, pos: int, end: int, truncated: bool, budget) -> dict:
    """Decode the top-level message at data[pos:end] as a batch dict."""
    if end - pos < _PREFIX.size + (8 if data[pos + 16] == 1 else 0):
        # The reader only calls with the magic byte present, so offset to magic are whole.
        offset, size, crc, magic = struct.unpack_from(">qiIb", data, pos)
        return new_batch(base_offset=offset, batch_length=size, magic=magic, crc=crc, truncated=True)
    offset, size, crc, magic, attributes = _PREFIX.unpack_from(data, pos)
    codec = attributes & 0x07
    timestamp = _TIMESTAMP.unpack_from(data, pos + _PREFIX.size)[0] if magic == 1 else None
    log_append_time = magic == 1 and bool(attributes & _TIMESTAMP_TYPE_BIT)
    crc_valid = None if truncated else zlib.crc32(memoryview(data)[pos + _CRC_START : end]) == crc
    batch = new_batch(
        base_offset=offset,
        batch_length=size,
        magic=magic,
        crc=crc,
        crc_valid=crc_valid,
        attributes=attributes,
        compression=compression_name(codec),
        timestamp_type=None if magic == 0 else ("LogAppendTime" if log_append_time else "CreateTime"),
        max_timestamp=timestamp,
        truncated=truncated,
    )
    if truncated:
        return batch
    try:
        key, value = _key_value(data, pos + _PREFIX.size + (8 if magic == 1 else 0), end)
        if codec == 0:
            batch["records"] = [legacy_record(offset, timestamp, key, value, attributes, crc, crc_valid)]
        else:
            if value is None:
                raise RecordsError("compressed wrapper message has a null value")
            inner = budget.decompress(codec, value)
            batch["records"] = _inner_records(
                inner, offset, magic, timestamp if log_append_time else None, batch, budget.records_allowed()
            )
            budget.charge_records(len(batch["records"]))
    except OverLimit:
        budget.charge_records(len(batch["records"]))
        batch["error"] = budget.records_spent()
    except RecordsError as e:
        batch["error"] = str(e)
    batch["records_count"] = len(batch["records"])
    return batch


def _key_value(data: bytes, pos: int, end: int) -> tuple[bytes | None, bytes | None]:
    fields: list[bytes | None] = []
    for name in ("key", "value"):
        if end - pos < 4:
            raise RecordsError(f"message {name} length runs past the message end")
        size = _LENGTH.unpack_from(data, pos)[0]
        pos += 4
        if size == -1:
            fields.append(None)
        elif size < 0 or size > end - pos:
            raise RecordsError(f"message {name} claims {size} bytes, {end - pos} left")
        else:
            fields.append(data[pos : pos + size])
            pos += size
    if pos != end:
        raise RecordsError(f"message has {end - pos} bytes after its value")
    return fields[0], fields[1]


def _inner_records(
    inner: bytes,
    wrapper_offset: int,
    wrapper_magic: int,
    log_append_time: int | None,
    batch: dict,
    limit: int = 1 << 62,
) -> list[dict]:
    """The messages of a wrapper's nested set; `batch["records"]` gets them as they parse."""
    records = batch["records"]
    pos = 0
    n = len(inner)
    while pos < n:
        if len(records) >= limit:
            raise OverLimit
        if n - pos < _PREFIX.size:
            raise RecordsError("inner message header truncated")
        offset, size, crc, magic, attributes = _PREFIX.unpack_from(inner, pos)
        end = pos + LOG_OVERHEAD + size
        if magic != wrapper_magic:
            raise RecordsError(f"inner message magic {magic} differs from wrapper {wrapper_magic}")
        if size < MIN_MESSAGE_SIZE[magic] or end > n:
            raise RecordsError(f"inner message claims {size} bytes, {n - pos - LOG_OVERHEAD} left")
        if attributes & 0x07:
            raise RecordsError("inner message is compressed again")
        timestamp = None
        if magic == 1:
            timestamp = _TIMESTAMP.unpack_from(inner, pos + _PREFIX.size)[0]
            if log_append_time is not None:
                timestamp = log_append_time
        key, value = _key_value(inner, pos + _PREFIX.size + (8 if magic == 1 else 0), end)
        crc_valid = zlib.crc32(memoryview(inner)[pos + _CRC_START : end]) == crc
        records.append(legacy_record(offset, timestamp, key, value, attributes, crc, crc_valid))
        pos = end
    # Magic 1 wrappers carry the last inner offset and inner offsets are relative to the
    # first; Java only rebases when the result is not negative (a producer's own wrapper
    # has offset 0 and is left relative).
    if wrapper_magic == 1 and records:
        base = wrapper_offset - records[-1]["offset"]
        if base >= 0:
            for record in records:
                record["offset"] += base
    return records
