"""Header versions follow flexibility, with the two exceptions Kafka makes (ApiKeys.java)."""

from kafka_protocol_source import decoder_for
from kafka_protocol_source.spec.headers import request_header_version, response_header_version

REGISTRY = decoder_for().registry


def test_flexible_versions_use_new_headers():
    produce_req, produce_resp = REGISTRY.request(0), REGISTRY.response(0)
    assert request_header_version(produce_req, 8) == 1 and request_header_version(produce_req, 9) == 2
    assert response_header_version(produce_resp, 8) == 0 and response_header_version(produce_resp, 9) == 1


def test_api_versions_responses_always_use_header_v0():
    resp = REGISTRY.response(18)
    assert [response_header_version(resp, v) for v in resp.valid_versions.versions()] == [0] * 5
    assert request_header_version(REGISTRY.request(18), 3) == 2


def test_controlled_shutdown_v0_request_has_header_v0():
    req = REGISTRY.request(7)
    assert request_header_version(req, 0) == 0
    assert request_header_version(req, 1) == 1
