"""What a ``records`` field must decode to, read with kafka-python's record readers.

Owns the expected form of a record set (batch and record dicts, the keys compared); does not
build record sets (``strategies.py``) or compare (``normalise.diff``).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ExpectedRecords:
    """What a ``records`` field must decode to, as read by kafka-python's record readers.

    ``batches`` is a list of {base_offset, magic, records: [{offset, timestamp, key, value,
    headers}]}. Our decoder may return more keys per batch/record (crc, attributes, ...): the
    comparison projects our output onto the keys named here (and any key named here that our
    output lacks is a failure).
    """

    batches: list[dict]


_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_TIMESTAMP_TYPES = {None: None, 0: "CreateTime", 1: "LogAppendTime"}


def expected_records(raw: bytes | None) -> ExpectedRecords | None:
    """Read a record set with kafka-python's (independent) record readers."""
    if raw is None:
        return None
    from kafka.record.memory_records import MemoryRecords

    batches = []
    records = MemoryRecords(bytes(raw))
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        assert batch.validate_crc()
        expected = {
            "base_offset": batch.base_offset,
            "magic": batch.magic,
            "crc_valid": True,
            "compression": _CODECS[batch.compression_type],
            "timestamp_type": _TIMESTAMP_TYPES[batch.timestamp_type],
            "records": [
                {
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": r.key,
                    "value": r.value,
                    "headers": [{"key": k, "value": v} for k, v in r.headers],
                }
                for r in batch
            ],
        }
        if batch.magic >= 2:
            expected.update(
                partition_leader_epoch=batch.leader_epoch,
                crc=batch.crc,
                is_transactional=batch.is_transactional,
                is_control=batch.is_control_batch,
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence,
                last_offset_delta=batch.last_offset_delta,
                base_timestamp=batch.first_timestamp,
                max_timestamp=batch.max_timestamp,
                records_count=batch.records_count,
            )
        batches.append(expected)
    return ExpectedRecords(batches)
