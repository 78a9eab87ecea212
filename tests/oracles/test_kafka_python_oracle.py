"""Our decoder against kafka-python 3.0.12's protocol layer, for every request and response class
it defines, at every version its JSON declares valid.

kafka-python 3 builds its codec at run time from Kafka 4.1-era JSON message definitions
(``kafka/protocol/schemas/resources``). Values are generated per field from that same schema
(``strategies.kp_message``), kafka-python encodes header + body, and our decoder must return the
same value. kafka-python's ``json_patch`` hooks rename and retype a few fields (authorized
operations become a ``bitfield`` set); expected names come from the unpatched JSON, zipped by
position, and bitfields are compared as the int32 kafka-python put on the wire.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from . import normalise as n
from ._decoder import ORACLE_SETTINGS, api_name, decoder
from .strategies import kp_message


@functools.cache
def message_classes() -> dict[str, type]:
    """kafka-python's request/response classes by name (the primary, unversioned class)."""
    import kafka.protocol as kp
    from kafka.protocol.api_message import ApiMessage

    for info in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
        # ``old`` is the pre-3.0 hand-written codec and ``generate_stubs`` a dev tool.
        if ".old" in info.name or info.name.endswith("generate_stubs"):
            continue
        importlib.import_module(info.name)

    found: dict[str, type] = {}

    def walk(cls):
        for sub in cls.__subclasses__():
            if getattr(sub, "_class_version", None) is None and sub.__dict__.get("_json"):
                found[sub.__name__] = sub
            walk(sub)

    walk(ApiMessage)
    return found


def _cases():
    for name, cls in sorted(message_classes().items()):
        _low, high = cls.valid_versions
        direction = "request" if cls.is_request() else "response"
        for version in range(0, high + 1):
            marks = []
            # Versions below ``low`` were removed in Kafka 4.0 (KIP-896) and the JSON declares
            # them invalid, but kafka-python still encodes them (its classes accept 0..max so
            # a client can talk to old brokers), and the 4.x JSON keeps the field version
            # ranges that describe them: they run too, as kafka-python's encoding of them.
            reason = KNOWN_BAD.get((name, version))
            if reason:
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
            yield pytest.param(name, version, direction, marks=marks, id=f"{name}-v{version}")


# Cases kafka-python supports that fail for a reason outside our decoder, each explained.
KNOWN_BAD: dict[tuple[str, int], str] = {}

CASES = list(_cases())


@functools.cache
def _raw_json(name: str) -> dict:
    from kafka.protocol.schemas import load_json

    return load_json(name)  # unpatched: the spec names, before kafka-python's json_patch


def _frame(got: dict) -> dict:
    """Everything but the body: any extra key (trailing_bytes, a fallback note) is a failure."""
    return {k: v for k, v in got.items() if k != "body"}


@pytest.mark.parametrize("name,version,direction", CASES)
@ORACLE_SETTINGS
@given(data=st.data())
def test_kafka_python_oracle(name, version, direction, data):
    kps = decoder()
    cls = message_classes()[name]
    message = data.draw(kp_message(cls, version), label="kafka-python message")
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1), label="correlation_id")
    if direction == "request":
        client_id = data.draw(st.one_of(st.none(), st.text(max_size=10)), label="client_id")
        message.with_header(correlation_id=correlation_id, client_id=client_id)
    else:
        message.with_header(correlation_id=correlation_id)
    payload = bytes(message.encode(header=True))
    # After encode: some classes fix up values while encoding (DeleteTopicsRequest v0-5).
    raw = _raw_json(name)
    expected_body = n.kafka_python_to_ours(message, cls._struct, raw["fields"], version, {})

    if direction == "request":
        got = kps.decode_request(payload)
        expected = {
            "api_key": cls.API_KEY,
            "api_name": api_name(name),
            "api_version": version,
            "correlation_id": correlation_id,
            "client_id": client_id,
        }
        problems = n.diff(expected, _frame(got), "frame")
    else:
        got = kps.decode_response(payload, cls.API_KEY, version)
        expected = {"api_key": cls.API_KEY, "api_version": version, "correlation_id": correlation_id}
        problems = n.diff(expected, _frame(got), "frame")
    problems += n.diff(expected_body, got.get("body"))
    assert not problems, f"{name} v{version} payload={payload.hex()}\n" + "\n".join(problems)
