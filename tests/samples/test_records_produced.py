"""The records on the wire are the records the capture script produced.

For each sample, the records inside the Produce requests we decoded equal, as a multiset, the
records ``NAME.produced.json`` lists (topic, partition, codec, key, value, headers), for every
codec and record format: record batches v2 and the legacy magic 0/1 message sets with their
compressed wrappers. Rejected records count too: their bytes are on the wire all the same. Every
record a Fetch response carries is an accepted produced record at the offset the broker gave it,
and each accepted record is fetched when the session has a consumer.
"""

import base64
from collections import Counter

import pytest

from .catalog import exchanges, sample, sample_names

NAMES = sample_names()


def manifest_bytes(v) -> bytes | None:
    if v is None:
        return None
    return v["text"].encode() if "text" in v else base64.b64decode(v["base64"])


def as_bytes(v) -> bytes | None:
    return v.encode() if isinstance(v, str) else v


def wire_record(topic, partition, codec, r) -> tuple:
    headers = tuple((as_bytes(h["key"]), h["value"]) for h in r["headers"])
    return topic, partition, codec, r["key"], r["value"], headers


def manifest_record(r) -> tuple:
    headers = tuple((as_bytes(k), manifest_bytes(v)) for k, v in r["headers"])
    return r["topic"], r["partition"], r["codec"], manifest_bytes(r["key"]), manifest_bytes(r["value"]), headers


def produced(name):
    s = sample(name)
    records = [r for r in s.manifest["records"] if s.codecs is None or r["codec"] in s.codecs]
    assert records
    return records


def batches(records_field):
    for batch in records_field or []:
        assert batch["error"] is None and not batch["truncated"], batch
        if batch["magic"] == 2:
            assert batch["crc_valid"]
        yield batch


def produce_batches(name):
    for e in exchanges(name):
        if e.api_name == "Produce":
            assert e.request is not None, e
            for topic in e.request["topic_data"]:
                for part in topic["partition_data"]:
                    for batch in batches(part["records"]):
                        yield topic["name"], part["index"], batch


@pytest.mark.parametrize("name", NAMES)
def test_produce_requests_carry_exactly_the_produced_records(name):
    on_wire = Counter(wire_record(t, p, b["compression"], r) for t, p, b in produce_batches(name) for r in b["records"])
    assert on_wire == Counter(manifest_record(r) for r in produced(name))


@pytest.mark.parametrize("name", NAMES)
def test_batches_decode_with_the_codec_and_magic_produced(name):
    by_codec = Counter((b["compression"], b["magic"]) for _, _, b in produce_batches(name) for _ in b["records"])
    assert by_codec == Counter((r["codec"], r["magic"]) for r in produced(name))
    for _, _, b in produce_batches(name):
        assert b["records_count"] == len(b["records"])


def topic_names(name) -> dict[str, str]:
    """topic id -> name, from the Metadata responses of the capture (Fetch v13+ names topics by id)."""
    ids = {}
    for e in exchanges(name):
        if e.api_name == "Metadata" and e.response is not None:
            for t in e.response["topics"]:
                if t.get("topic_id") and t.get("name"):
                    ids[t["topic_id"]] = t["name"]
    return ids


def fetched(name):
    ids = topic_names(name)
    for e in exchanges(name):
        if e.api_name == "Fetch" and e.response is not None:
            for topic in e.response["responses"]:
                topic_name = topic.get("topic") or ids[topic["topic_id"]]
                for part in topic["partitions"]:
                    for batch in batches(part["records"]):
                        for r in batch["records"]:
                            yield r["offset"], wire_record(topic_name, part["partition_index"], batch["compression"], r)


@pytest.mark.parametrize("name", NAMES)
def test_fetched_records_are_accepted_produced_records(name):
    accepted = {
        (r["topic"], r["partition"], r["offset"]): manifest_record(r) for r in produced(name) if r["error"] is None
    }
    seen = {}
    for offset, record in fetched(name):
        key = (record[0], record[1], offset)
        assert accepted.get(key) == record, key
        seen[key] = record
    has_consumer = any(e.api_name == "Fetch" for e in exchanges(name))
    assert seen.keys() == (accepted.keys() if has_consumer else set())


def test_the_samples_cover_every_codec_and_magic():
    kinds = {(b["magic"], b["compression"]) for n in NAMES for _, _, b in produce_batches(n)}
    assert {(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")} <= kinds
    assert {(m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")} <= kinds
    assert sum(1 for n in NAMES for _ in fetched(n)) > 100
