"""Test helper: what the plain-Python pipeline reads from the sample captures (the Spark tests' oracle).

``exchanges(path)`` is ``read_capture`` with the data source's default options, cached per
process, so every Spark test compares against the same decoding without Spark in the loop.
``manifest(name)`` is the produced-records manifest beside a capture, with bytes as bytes.
"""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path

from kafka_protocol_source import Exchange, read_capture

SAMPLES = Path(__file__).resolve().parents[2] / "sample_captures"

# small captures that between them carry every api the typed-view tests look at
TANSU_CONFLUENT = SAMPLES / "tansu_confluent_kafka_all_codecs.pcap"  # Produce v10, Fetch v16, Metadata v12
MOCK_AIOKAFKA = SAMPLES / "mock_aiokafka_all_codecs.pcap"  # ApiVersions v0, Produce v7, Fetch v11, JoinGroup v5
TANSU_AIOKAFKA_PCAPNG = SAMPLES / "tansu_aiokafka_all_codecs.pcapng"
MOCK_CONFLUENT = SAMPLES / "mock_confluent_kafka_all_codecs_any_sll2.pcap"  # ApiVersions v0 and v3
# every Produce answered with error 59 UNKNOWN_PRODUCER_ID (the broker refused the records)
TANSU_REJECTED = SAMPLES / "tansu_kafka_python_legacy_magic1_rejected.pcap"
TCPFLOW_DIR = SAMPLES / "tcpflow_tansu_confluent_kafka_all_codecs"


@functools.cache
def exchanges(path: str | Path) -> tuple[Exchange, ...]:
    return tuple(read_capture(str(path)))


def by_exchange(path) -> dict[tuple[str, int], Exchange]:
    """Exchanges with a request, keyed by (connection_id, correlation_id)."""
    return {(e.connection_id, e.correlation_id): e for e in exchanges(path) if e.correlation_id is not None}


def manifest_bytes(v) -> bytes | None:
    if v is None:
        return None
    return v["text"].encode() if "text" in v else base64.b64decode(v["base64"])


@functools.cache
def manifest(capture_name: str) -> dict:
    """NAME.produced.json of a capture file name, records' key/value/header values as bytes."""
    raw = json.loads((SAMPLES / f"{capture_name.split('.')[0]}.produced.json").read_text())
    for r in raw["records"]:
        r["key"], r["value"] = manifest_bytes(r["key"]), manifest_bytes(r["value"])
        r["headers"] = [(k, manifest_bytes(v)) for k, v in r["headers"]]
    return raw


def capture_names() -> list[str]:
    return sorted(json.loads(p.read_text())["capture"] for p in SAMPLES.glob("*.produced.json"))
