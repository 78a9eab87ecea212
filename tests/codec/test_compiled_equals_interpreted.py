"""For every message and version in specs/: compiled and interpreted parsers agree."""

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
