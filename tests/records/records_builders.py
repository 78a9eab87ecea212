"""Test helpers: record sets built with kafka-python (the oracle) and hand-made variants.

Kept in a uniquely named module because tests/ has no package structure to namespace it.
"""

import struct
import zlib

import crc32c
import kafka.codec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from kafka.record.util import encode_varint

from kafka_protocol_source.records.lz4_frame import xxh32

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
V2_HEADER = struct.Struct(">qiibIhiqqqhii")


class XXHashShim:
    """Stands in for the `xxhash` package kafka-python wants for magic 0 LZ4.

    Our xxh32 is checked against frames from the lz4 package in test_records_codecs, so
    this does not make kafka-python lean on unverified code.
    """

    class _Digest:
        def __init__(self, value):
            self._value = value

        def digest(self):
            return self._value.to_bytes(4, "big")

    @classmethod
    def xxh32(cls, data):
        return cls._Digest(xxh32(bytes(data)))


def install_xxhash_shim(monkeypatch):
    monkeypatch.setattr(kafka.codec, "xxhash", XXHashShim)


def build_set(magic, codec, entries, base_offset=0, **producer):
    """A record set via MemoryRecordsBuilder; entries are (timestamp, key, value, headers)."""
    builder = MemoryRecordsBuilder(magic, codec, batch_size=1 << 30, offset=base_offset, **producer)
    for timestamp, key, value, headers in entries:
        assert builder.append(timestamp, key, value, headers if magic == 2 else None)
    builder.close()
    return bytes(builder.buffer())


def build_v2(entries, codec=NONE, is_transactional=False, producer_id=-1, producer_epoch=-1, base_sequence=-1):
    builder = DefaultRecordBatchBuilder(
        2, codec, is_transactional, producer_id, producer_epoch, base_sequence, batch_size=1 << 30
    )
    for offset, (timestamp, key, value, headers) in enumerate(entries):
        builder.append(offset, timestamp, key, value, headers)
    return bytes(builder.build())


def build_legacy(magic, codec, entries, first_offset=0):
    builder = LegacyRecordBatchBuilder(magic, codec, batch_size=1 << 30)
    for i, (timestamp, key, value) in enumerate(entries):
        builder.append(first_offset + i, timestamp, key, value)
    return bytes(builder.build())


def oracle_records(buf):
    """(offset, timestamp, key, value, headers) per record, as kafka-python reads them."""
    out = []
    for batch in MemoryRecords(buf):
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]))
    return out


def our_records(batches):
    return [
        (r["offset"], r["timestamp"], r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]])
        for b in batches
        for r in b["records"]
    ]


def patch_v2(buf, **fields):
    """Rewrite v2 header fields of the batch at the start of buf and fix its CRC32C."""
    names = (
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
    )
    values = dict(zip(names, V2_HEADER.unpack_from(buf, 0), strict=True))
    values.update(fields)
    out = bytearray(buf)
    V2_HEADER.pack_into(out, 0, *(values[n] for n in names))
    if "crc" not in fields:
        struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21 : 12 + values["batch_length"]])))
    return bytes(out)


def varint(value):
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


def raw_record(
    key, value, offset_delta=0, timestamp_delta=0, headers=(), attributes=0, key_length=None, header_count=None
):
    """One v2 record by hand; the *_length/count overrides let a test lie about sizes."""
    body = bytearray([attributes])
    body += varint(timestamp_delta) + varint(offset_delta)
    for field, claimed in ((key, key_length), (value, None)):
        if field is None:
            body += varint(-1 if claimed is None else claimed)
        else:
            body += varint(len(field) if claimed is None else claimed) + field
    body += varint(len(headers) if header_count is None else header_count)
    for hkey, hvalue in headers:
        body += varint(len(hkey)) + hkey
        body += varint(-1) if hvalue is None else varint(len(hvalue)) + hvalue
    return varint(len(body)) + bytes(body)


def raw_v2_batch(
    records_bytes,
    records_count,
    base_offset=0,
    attributes=0,
    last_offset_delta=0,
    base_timestamp=0,
    max_timestamp=0,
    producer_id=-1,
    producer_epoch=-1,
    base_sequence=-1,
    partition_leader_epoch=0,
):
    """A v2 batch around already encoded (possibly compressed) records, with a true CRC."""
    length = V2_HEADER.size - 12 + len(records_bytes)
    header = bytearray(
        V2_HEADER.pack(
            base_offset,
            length,
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            records_count,
        )
    )
    buf = header + records_bytes
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def legacy_message(magic, offset, key, value, attributes=0, timestamp=0):
    """One legacy message by hand with a true CRC32."""
    body = bytearray([magic, attributes])
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    crc = zlib.crc32(bytes(body))
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)
