"""The JSON specs and their krammar rendering (specs/kafka.krammar) are the same protocol.

For every message: the IR from both front-ends is identical (all facts but ``version_sources``,
which says which upstream JSON file a version came from and has no krammar spelling), and so is
the message resolved at every version. Decoders built from either read every sample capture to
identical values. franz-go checks its own definitions against Kafka's JSON the same way
(generate/validate_test.go).
"""

from __future__ import annotations

import dataclasses

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.spec.krammar import lower_document, parse_krammar, render_krammar
from kafka_protocol_source.spec.krammar.__main__ import main as krammar_main
from kafka_protocol_source.spec.registry import DEFAULT_SPECS, SpecRegistry, registry_for

from ...samples.catalog import sample, sample_names
from ...upstream import KAFKA_4X, OCT_2024, needs_upstream

KRAMMAR = DEFAULT_SPECS / "kafka.krammar"
JSON = registry_for()


@pytest.fixture(scope="module")
def from_krammar() -> SpecRegistry:
    return registry_for(str(KRAMMAR))


def test_the_bundled_krammar_file_is_rendered_from_the_json_specs(capsys):
    assert krammar_main(["--check"]) == 0, "specs/kafka.krammar is stale: python -m kafka_protocol_source.spec.krammar"


def test_both_front_ends_define_the_same_messages(from_krammar):
    assert sorted(from_krammar.messages) == sorted(JSON.messages)
    assert from_krammar.api_keys() == JSON.api_keys()


@pytest.mark.parametrize("name", sorted(JSON.messages))
def test_each_message_lowers_to_the_same_ir(name, from_krammar):
    assert from_krammar.message(name) == dataclasses.replace(JSON.message(name), version_sources=())


def _every_version():
    for api_key in JSON.api_keys():
        for direction in ("request", "response"):
            message = getattr(JSON, direction)(api_key)
            for version in message.valid_versions.versions():
                yield api_key, direction, version
    for message in JSON.messages.values():
        if message.kind in ("header", "data"):
            for version in message.valid_versions.versions():
                yield message.name, message.kind, version


def test_every_api_key_version_and_direction_resolves_identically(from_krammar):
    checked = 0
    for key, direction, version in _every_version():
        if direction in ("request", "response"):
            name = getattr(JSON, direction)(key).name
            assert getattr(from_krammar, direction)(key).name == name
        else:
            name = key
        assert from_krammar.resolved(name, version) == JSON.resolved(name, version), (name, version)
        checked += 1
    assert checked > 700  # 88 apis, both directions, every version; headers and data messages


def test_render_parse_render_is_stable():
    text = KRAMMAR.read_text(encoding="utf-8")
    document = parse_krammar(text, str(KRAMMAR))
    header = [line[3:] if line != "//" else "" for line in document.comment]
    assert render_krammar(lower_document(document).values(), header) == text


@pytest.mark.parametrize("name", sample_names())
def test_sample_captures_decode_identically(name, from_krammar):
    s = sample(name)
    with_json = list(read_capture(s.path, ports=(s.broker_port,)))
    with_krammar = list(read_capture(s.path, ports=(s.broker_port,), specs=str(KRAMMAR)))
    assert len(with_krammar) == len(with_json) > 0
    decoded = sum(e.request is not None for e in with_json)
    assert decoded > 0
    for a, b in zip(with_json, with_krammar, strict=True):
        assert a == b


def test_an_edited_krammar_file_is_what_decodes(tmp_path):
    edited = tmp_path / "renamed.krammar"
    text = KRAMMAR.read_text(encoding="utf-8")
    assert text.count("\n  Acks: int16\n") == 1
    edited.write_text(text.replace("\n  Acks: int16\n", "\n  RequiredAcks: int16\n"), encoding="utf-8")
    s = sample("tansu_confluent_kafka_all_codecs")
    produce = [e for e in read_capture(s.path, ports=(s.broker_port,), specs=str(edited)) if e.api_name == "Produce"]
    assert produce and all("required_acks" in e.request and "acks" not in e.request for e in produce)


@needs_upstream
@pytest.mark.parametrize("source", [OCT_2024, KAFKA_4X], ids=["kafka-message-specs", "kafka-message-specs-4x"])
def test_upstream_json_directories_render_to_krammar_and_back(source, tmp_path):
    """Apache Kafka's own files, read directly (with their comments), not through our importer."""
    out = tmp_path / "upstream.krammar"
    assert krammar_main([str(source), "--out", str(out)]) == 0
    upstream = SpecRegistry.from_directory(source)
    rendered = SpecRegistry.from_path(out)
    assert sorted(rendered.messages) == sorted(upstream.messages)
    for name, message in upstream.messages.items():
        assert rendered.message(name) == message, name
