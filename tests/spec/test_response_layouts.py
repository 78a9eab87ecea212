"""The response versions grouped by layout: what reads any bytes alike is one group, nothing else."""

from kafka_protocol_source.spec.headers import response_header_version
from kafka_protocol_source.spec.registry import registry_for


def test_the_layouts_group_every_response_version_once():
    registry = registry_for(None)
    layouts = registry.response_layouts()
    grouped = [(api_key, version) for (api_key, first), versions in layouts.items() for version in versions]
    assert sorted(grouped) == sorted(registry.response_versions())
    assert len(layouts) < len(grouped)  # (versions that only add request fields share a response layout)


def test_a_group_is_one_api_with_one_header_and_the_same_fields():
    registry = registry_for(None)
    seen = {}
    for (api_key, first_version), versions in registry.response_layouts().items():
        assert versions[0] == first_version
        message = registry.response(api_key)
        first = registry.resolved(message.name, versions[0])
        for version in versions:
            assert response_header_version(message, version) == response_header_version(message, versions[0])
            assert registry.resolved(message.name, version) == first
        seen.setdefault(api_key, []).append(first)
    for firsts in seen.values():  # and the groups of one api differ
        assert all(a != b for i, a in enumerate(firsts) for b in firsts[i + 1 :])


def test_fetch_v13_to_15_are_one_layout_and_v16_to_18_another():
    layouts = {versions for (api_key, _), versions in registry_for(None).response_layouts().items() if api_key == 1}
    assert (13, 14, 15) in layouts and (16, 17, 18) in layouts


def test_the_tagged_fields_of_a_response_at_any_depth():
    registry = registry_for(None)
    assert {"node_endpoints", "current_leader", "diverging_epoch", "snapshot_id"} <= registry.response_tagged_fields(
        1, 16
    )
    assert "node_endpoints" not in registry.response_tagged_fields(1, 15)
    assert not {"topic", "topic_id", "records"} & registry.response_tagged_fields(1, 16)
    assert registry.response_tagged_fields(1, 11) == frozenset()  # not flexible
