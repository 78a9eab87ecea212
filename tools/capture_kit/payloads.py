"""Deterministic records to produce, and their JSON form for NAME.produced.json.

Owns what a scenario sends (keys, values, headers per codec and index) so that tests can later check
that the decoder recovers exactly these bytes from the capture. Does not talk to any broker.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS_PER_CODEC = 6


@dataclass(frozen=True)
class PlannedRecord:
    """One record a session will hand to its producer."""

    topic: str
    partition: int
    codec: str
    index: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Outcome:
    """What the broker said about one record: an offset, or an error (a rejected record's request
    bytes are still on the wire)."""

    partition: int | None
    offset: int | None
    error: str | None


def plan_records(scenario: str, topic: str, codecs: tuple[str, ...], with_headers: bool) -> list[PlannedRecord]:
    """Records for every codec; index 0 has a null key, index 1 an empty value, index 2 a binary
    value, index 3 a compressible value, so each edge case sits inside every compressed batch."""
    records = []
    for codec in codecs:
        for index in range(RECORDS_PER_CODEC):
            stem = f"{scenario}/{codec}/{index}"
            key = None if index == 0 else f"key/{stem}".encode()
            if index == 1:
                value = b""
            elif index == 2:
                value = hashlib.sha256(stem.encode()).digest()[:12] + b"\xff\xfe\x00"
            elif index == 3:
                value = (f"{stem} compressible " * 8).encode()
            else:
                value = f"value/{stem}".encode()
            headers = _headers_for(stem, index) if with_headers else ()
            records.append(PlannedRecord(topic, 0, codec, index, key, value, headers))
    return records


def _headers_for(stem: str, index: int) -> tuple[tuple[str, bytes], ...]:
    if index % 3 == 0:
        return ()
    if index % 3 == 1:
        return (("trace-id", f"trace/{stem}".encode()),)
    return (("trace-id", f"trace/{stem}".encode()), ("empty", b""), ("binary", b"\x00\x01\xfe\xff"))


def bytes_to_json(data: bytes | None) -> dict[str, str] | None:
    """{"text": ...} for UTF-8 bytes, {"base64": ...} otherwise, None for null."""
    if data is None:
        return None
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def record_to_json(record: PlannedRecord, outcome: Outcome, client: str, magic: int) -> dict:
    return {
        "topic": record.topic,
        "partition": outcome.partition if outcome.partition is not None else record.partition,
        "codec": record.codec,
        "index": record.index,
        "client": client,
        "magic": magic,
        "key": bytes_to_json(record.key),
        "value": bytes_to_json(record.value),
        "headers": [[name, bytes_to_json(value)] for name, value in record.headers],
        "offset": outcome.offset,
        "error": outcome.error,
    }
