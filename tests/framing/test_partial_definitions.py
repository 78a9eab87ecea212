"""Definitions that do not cover every api change how bodies decode, never which frames pair.

A krammar file and a JSON directory that define only FindCoordinator (with field names of
their own) and the two headers are read over every sample capture, with and without ``ports``:
the exchanges and their pairing must equal those of a read with the bundled definitions; apis
outside the file are ``unknown_api`` with raw bytes and latency; FindCoordinator decodes with
the file's names. A capture whose frames carry an api key and a version beyond the bundled
definitions pairs too.
"""

from __future__ import annotations

import shutil
import struct

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.spec.registry import DEFAULT_SPECS
from tests.cuts import one_side, segments_of
from tests.samples.catalog import samples

from .kafkaflow import Conversation, metadata_v1_request, metadata_v1_response
from .test_read_capture import run

CAPTURES = [s for s in samples() if s.path.suffix in (".pcap", ".pcapng")]
FIND_COORDINATOR = 10


def _blocks(text: str, names: tuple[str, ...]) -> list[str]:
    return [b for b in text.split("\n\n") if b.split(" =>", 1)[0].strip() in names]


@pytest.fixture(scope="module")
def partial_krammar(tmp_path_factory) -> str:
    text = (DEFAULT_SPECS / "kafka.krammar").read_text()
    kept = _blocks(text, ("FindCoordinatorRequest", "FindCoordinatorResponse", "RequestHeader", "ResponseHeader"))
    assert len(kept) == 4
    own = (
        "\n\n".join(kept).replace("  Key: string", "  GroupKey: string").replace("  CoordinatorKeys:", "  WantedKeys:")
    )
    path = tmp_path_factory.mktemp("krammar") / "find_coordinator_only.krammar"
    path.write_text(own + "\n")
    return str(path)


@pytest.fixture(scope="module")
def partial_json(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("json")
    for name in ("FindCoordinatorRequest", "FindCoordinatorResponse", "RequestHeader", "ResponseHeader"):
        shutil.copy(DEFAULT_SPECS / f"{name}.json", folder / f"{name}.json")
    return str(folder)


def _pairs(rows):
    return sorted(
        (
            e.connection_id,
            e.correlation_id,
            e.api_key,
            e.api_version,
            e.client_id,
            e.request_size,
            e.response_size,
            e.request_packet,
            e.response_packet,
        )
        for e in rows
    )


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
@pytest.mark.parametrize("kind", ["krammar", "json"])
@pytest.mark.parametrize("with_ports", [True, False])
def test_partial_definitions_pair_exactly_as_the_bundled_ones(s, kind, with_ports, partial_krammar, partial_json):
    specs = partial_krammar if kind == "krammar" else partial_json
    ports = [s.broker_port] if with_ports else None
    bundled = list(read_capture(s.path, ports=ports))
    partial = list(read_capture(s.path, ports=ports, specs=specs))
    assert _pairs(partial) == _pairs(bundled)
    assert any(e.status == "unknown_api" for e in partial)
    by_key = {(e.connection_id, e.correlation_id, e.request_packet): e for e in bundled}
    for e in partial:
        was = by_key[(e.connection_id, e.correlation_id, e.request_packet)]
        if e.api_key == FIND_COORDINATOR and was.status == "ok":
            assert e.status == "ok" and e.error is None
            if kind == "krammar":
                assert {"group_key", "wanted_keys"} & set(e.request)  # the file's names, not Kafka's
        elif was.status == "ok":
            assert e.status == "unknown_api", e
            assert e.raw_request and e.raw_response and e.latency_ms == was.latency_ms
            assert e.api_name == was.api_name  # named from the protocol's own table
            assert f"is not in {specs}" in e.error


def test_an_api_key_and_a_version_beyond_the_bundled_ones_pair_as_unknown_api(tmp_path):
    c = Conversation()
    newer_version = bytearray(metadata_v1_request(1))
    struct.pack_into(">h", newer_version, 2, 99)  # Metadata v99: a Kafka release after ours
    c.request(bytes(newer_version))
    vendor_api = bytearray(metadata_v1_request(2, client_id="vendor-tool"))
    struct.pack_into(">h", vendor_api, 0, 1234)  # an api key no Kafka release has
    c.request(bytes(vendor_api))
    c.response(metadata_v1_response(1))
    c.response(metadata_v1_response(2))
    c.request(metadata_v1_request(3))
    c.response(metadata_v1_response(3))
    for ports in ([9092], None):
        rows = run(tmp_path, c.pcap(), ports=ports)
        summary = [(e.status, e.api_key, e.api_version, e.correlation_id, e.client_id) for e in rows]
        assert summary == [
            ("unknown_api", 3, 99, 1, "app"),
            ("unknown_api", 1234, 1, 2, "vendor-tool"),
            ("ok", 3, 1, 3, "app"),
        ]
        assert all(e.latency_ms is not None and e.raw_request and e.raw_response for e in rows[:2])
        assert rows[0].api_name == "Metadata" and rows[1].api_name is None


@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_with_only_the_brokers_side_a_response_is_read_as_an_api_of_the_file_only_if_no_other_api_reads_it(
    s, partial_json, tmp_path
):
    """Which api sent a response whose request is missing is asked of every api the bundled
    definitions have too: that the file defines only FindCoordinator does not make every
    response FindCoordinator reads one."""
    path = one_side(segments_of(s.path), s.broker_port).write(tmp_path / "broker_only.pcap")
    whole = {(e.connection_id, e.correlation_id): e for e in read_capture(s.path, ports=[s.broker_port])}
    rows = [e for e in read_capture(path, ports=[s.broker_port], specs=partial_json) if e.status == "request_missing"]
    assert rows
    for e in rows:
        if e.api_key is not None:
            assert e.api_key == whole[e.connection_id, e.correlation_id].api_key == FIND_COORDINATOR, e
    bundled = [e for e in read_capture(path, ports=[s.broker_port]) if e.status == "request_missing"]
    assert {_key(e) for e in rows if e.api_key is not None} == {
        _key(e) for e in bundled if e.api_key == FIND_COORDINATOR
    }


def _key(e) -> tuple:
    return e.connection_id, e.correlation_id, e.api_version
