"""Error codes found through the spec's paths are those a walk of the whole body finds."""

import copy
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol_source.codec.decoder import decoder_for
from kafka_protocol_source.pipeline import read_capture
from kafka_protocol_source.spec.api_keys import API_VERSIONS, ENVELOPE, FETCH, METADATA
from kafka_protocol_source.views.outcomes import ResponseErrorCodes, error_codes
from tests.conftest import SAMPLES


@cache
def _responses() -> list:
    found = []
    for path in sorted(SAMPLES.glob("*.pcap*")):
        found += [(ex.api_key, ex.api_version, ex.response) for ex in read_capture(str(path)) if ex.response]
    return found


def _codes() -> ResponseErrorCodes:
    return ResponseErrorCodes(decoder_for(None).registry)


def test_every_sample_response_gives_the_codes_of_a_whole_walk():
    codes = _codes()
    responses = _responses()
    assert {key for key, _, _ in responses} >= {API_VERSIONS, METADATA, FETCH}
    for api_key, api_version, body in responses:
        assert codes.codes(api_key, api_version, body) == error_codes(body)


def _error_code_holders(value, found):
    """Every dict with an ``error_code`` key, records excepted (as ``error_codes`` does)."""
    if isinstance(value, dict):
        if "error_code" in value:
            found.append(value)
        for key, v in value.items():
            if key != "records":
                _error_code_holders(v, found)
    elif isinstance(value, list):
        for v in value:
            _error_code_holders(v, found)
    return found


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_codes_set_anywhere_in_a_sample_response_are_found(data):
    """A sample response with its error codes, wherever they are, set to drawn values."""
    candidates = [r for r in _responses() if _error_code_holders(r[2], [])]
    api_key, api_version, body = data.draw(st.sampled_from(candidates))
    body = copy.deepcopy(body)
    for holder in _error_code_holders(body, []):
        holder["error_code"] = data.draw(st.sampled_from([0, 0, 3, 6, 15, 25, 87, -1]))
    assert _codes().codes(api_key, api_version, body) == error_codes(body)


def test_a_body_unlike_its_spec_is_walked_whole():
    """An Envelope response's inner response is decoded beside its bytes, where the spec has
    no error codes; a body decoded at ApiVersions' fallback v0 has fewer fields than v3's."""
    codes = _codes()
    envelope = {"error_code": 0, "response_data": b"", "response_data_decoded": {"body": {"error_code": 29}}}
    assert codes.codes(ENVELOPE, 0, envelope) == [29]
    fallback = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]}
    assert codes.codes(API_VERSIONS, 3, fallback) == [35]


def test_versions_the_specs_do_not_know_are_walked_whole():
    body = {"topics": [{"partitions": [{"error_code": 6}]}]}
    assert _codes().codes(METADATA, 999, body) == [6]
    assert _codes().codes(None, None, body) == [6]
