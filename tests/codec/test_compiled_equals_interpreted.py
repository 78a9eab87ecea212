"""For every message and version in specs/: compiled and interpreted parsers agree."""

from io import BytesIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source import decoder_for

from .common import decode_both
from .wiregen import message_bytes

DECODER = decoder_for()
CASES = [(name, v) for name, m in sorted(DECODER.registry.messages.items()) for v in m.valid_versions.versions()]


@pytest.mark.parametrize("name,version", [pytest.param(*c, id=f"{c[0]}-v{c[1]}") for c in CASES])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_compiled_equals_interpreted(name, version, data):
    parser = DECODER.parsers.get(name, version)
    decode_both(parser, data.draw(message_bytes(DECODER.registry.resolved(name, version))))


# ApiVersionsResponse v3: error code, then api_keys (compact array) of fixed-width elements, which
# compiled code reads all at once when every element's tag section is empty.
_EMPTY_TAGS = b"\x00"
_RANGE_0 = b"\x00\x00" + b"\x00\x00" + b"\x00\x09"
_RANGE_1 = b"\x00\x01" + b"\x00\x00" + b"\x00\x0c"
_UNKNOWN_TAG = b"\x01" + b"\x05" + b"\x02" + b"\xab\xcd"  # one field, tag 5, two bytes


@pytest.mark.parametrize(
    "api_keys",
    [
        b"\x01",  # none
        b"\x03" + _RANGE_0 + _EMPTY_TAGS + _RANGE_1 + _EMPTY_TAGS,
        b"\x03" + _RANGE_0 + _EMPTY_TAGS + _RANGE_1 + _UNKNOWN_TAG,  # read element by element
    ],
    ids=["empty", "all-at-once", "a-tagged-element"],
)
def test_arrays_of_fixed_width_elements_read_at_once_or_element_by_element_alike(api_keys):
    parser = DECODER.parsers.get("ApiVersionsResponse", 3)
    body = b"\x00\x00" + api_keys + b"\x00\x00\x00\x00" + _EMPTY_TAGS
    decoded = decode_both(parser, body)
    assert [e["api_key"] for e in decoded["api_keys"]] == list(range(len(decoded["api_keys"])))
    for cut in range(2, len(body)):  # cut anywhere after the error code: an error, never a value
        with pytest.raises(Exception):  # noqa: B017 - compiled code may raise any error; the decoder re-reads
            parser.parse_compiled(BytesIO(body[:cut]))
