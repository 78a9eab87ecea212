"""specs/ is exactly what the importer makes of the upstream definitions, and holds no prose."""

import json
from pathlib import Path

import pytest

from kafka_protocol_source.spec.importer import ImportConflict, import_specs, merge, source_label
from kafka_protocol_source.spec.registry import SpecRegistry

from ..upstream import KAFKA_4X, OCT_2024, needs_upstream

ROOT = Path(__file__).resolve().parents[2]
NEW_LABEL = "kafka 4.1 (kafka-python 3.0.12 resources)"


@needs_upstream
def test_reimport_reproduces_specs(tmp_path):
    import_specs([(NEW_LABEL, KAFKA_4X), (source_label(OCT_2024), OCT_2024)], tmp_path)
    ours = sorted(p.name for p in (ROOT / "specs").glob("*.json"))
    assert ours == sorted(p.name for p in tmp_path.glob("*.json"))
    for name in ours:
        assert (ROOT / "specs" / name).read_text() == (tmp_path / name).read_text(), name


def _keys(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def test_specs_hold_facts_not_prose():
    for path in (ROOT / "specs").glob("*.json"):
        keys = set(_keys(json.loads(path.read_text())))  # plain JSON: upstream comments cannot survive
        assert "about" not in keys, path.name


def test_every_api_key_and_the_4_1_versions_are_there():
    registry = SpecRegistry.from_directory(ROOT / "specs")
    assert set(range(0, 88)) - {62} <= set(registry.api_keys())
    produce = registry.request(0)
    assert (produce.valid_versions.low, produce.valid_versions.high) == (0, 13)
    assert registry.request(1).valid_versions.high == 18  # Fetch v18 from Kafka 4.1
    assert registry.api_name(0) == "Produce" and registry.api_key_by_name("fetch") == 1


@needs_upstream
def test_upstream_directory_loads_as_is_and_agrees_with_specs():
    upstream = SpecRegistry.from_directory(OCT_2024)
    ours = SpecRegistry.from_directory(ROOT / "specs")
    for name, message in upstream.messages.items():
        for v in message.valid_versions.versions():
            assert upstream.resolved(name, v) == ours.resolved(name, v), f"{name} v{v}"


def _msg(valid, fields, flexible="none"):
    return {
        "apiKey": 99,
        "type": "request",
        "name": "XRequest",
        "validVersions": valid,
        "flexibleVersions": flexible,
        "fields": fields,
    }


def test_merge_takes_newest_and_extends_with_dropped_versions():
    f = [{"name": "A", "type": "int32", "versions": "0+", "about": "prose"}]
    merged = merge([("new", _msg("3-5", f)), ("old", _msg("0-4", f))])
    assert merged["validVersions"] == "0-5"
    assert merged["versionSources"] == {"3-5": "new", "0-2": "old"}
    assert "about" not in merged["fields"][0]


def test_merge_refuses_sources_that_disagree():
    new = _msg("3-5", [{"name": "A", "type": "int32", "versions": "0+"}])
    old = _msg("0-4", [{"name": "A", "type": "int64", "versions": "0+"}])
    with pytest.raises(ImportConflict, match="lay it out differently"):
        merge([("new", new), ("old", old)])


def test_quoted_tag_numbers_become_ints():
    # BrokerHeartbeatRequest.json upstream writes "tag": "0"; a string tag never matched the wire.
    registry = SpecRegistry.from_directory(ROOT / "specs")
    struct = registry.resolved("BrokerHeartbeatRequest", 1)
    assert [(f.name, f.tag) for f in struct.tagged] == [("offline_log_dirs", 0)]
