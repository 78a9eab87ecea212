"""The exact shape of the dicts `decode_records` returns.

Owns the key sets and the constructors of batch and record dicts, so every stage that builds
one (v2, legacy, truncation stubs) yields the same keys and a Spark schema can stay uniform.
Does not decode anything.
"""

RECORD_KEYS = (
    "offset",
    "timestamp",
    "key",
    "value",
    "headers",
    "attributes",
    "crc",
    "crc_valid",
    "control",
)

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# Ints that a batch dict always carries get -1 when the bytes ran out before them, so a
# non-null column stays non-null; optional fields get None.
UNKNOWN = -1


def compression_name(codec_id: int) -> str:
    name = CODEC_NAMES.get(codec_id)
    return name if name is not None else f"unknown({codec_id})"


# The keys of a batch dict, in order, with the value each has until the bytes say otherwise.
_BATCH_DEFAULTS: dict = {
    "base_offset": UNKNOWN,
    "batch_length": UNKNOWN,
    "partition_leader_epoch": None,
    "magic": UNKNOWN,
    "crc": UNKNOWN,
    "crc_valid": None,
    "attributes": UNKNOWN,
    "compression": compression_name(UNKNOWN),
    "timestamp_type": None,
    "is_transactional": False,
    "is_control": False,
    "has_delete_horizon": False,
    "last_offset_delta": None,
    "base_timestamp": None,
    "max_timestamp": None,
    "producer_id": None,
    "producer_epoch": None,
    "base_sequence": None,
    "records_count": 0,
    "records": [],
    "truncated": False,
    "error": None,
}
BATCH_KEYS = tuple(_BATCH_DEFAULTS)


def new_batch(**fields) -> dict:
    """A batch dict with every key present; `fields` overrides the defaults."""
    batch = dict(_BATCH_DEFAULTS)
    batch["records"] = []  # a list of its own
    batch.update(fields)
    if len(batch) != len(_BATCH_DEFAULTS):  # (cheaper than a set difference per batch)
        raise TypeError(f"not batch keys: {sorted(fields.keys() - _BATCH_DEFAULTS.keys())}")
    return batch


def legacy_record(offset, timestamp, key, value, attributes, crc, crc_valid) -> dict:
    return {
        "offset": offset,
        "timestamp": timestamp,
        "key": key,
        "value": value,
        "headers": [],
        "attributes": attributes,
        "crc": crc,
        "crc_valid": crc_valid,
        "control": None,
    }
