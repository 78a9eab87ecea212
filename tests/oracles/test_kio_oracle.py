"""Our decoder against kio 0.5.0, for every (api, version, direction) kio generates.

kio's dataclasses are generated from Kafka's Oct 2024 message specs, whose JSON files (found as
``tests/upstream.py`` says) give the original field names. hypothesis builds a message with
``st.from_type`` (kio's constrained ints, timedeltas and datetimes carry their own strategies),
kio serialises the header and body exactly as a client or broker would, and our decoder must
return the same value.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ..upstream import OCT_2024, needs_upstream
from . import normalise as n
from ._decoder import ORACLE_SETTINGS, api_name, decoder, request_header_version, response_header_version
from .strategies import kio_entity, kio_request_header


def _kio_cases() -> list[tuple[int, str, int, str]]:
    from kio.schema.index import api_key_map, schema_name_map

    cases = []
    for api_key, name in sorted(api_key_map.items()):
        for version in sorted(schema_name_map[name]):
            for direction in ("request", "response"):
                cases.append((api_key, name, version, direction))
    return cases


CASES = _kio_cases()

# Cases kio generates that are not run, each with the reason. Empty: every kio case runs.
KNOWN_BAD: dict[tuple[str, int, str], str] = {}

# Names Kafka changed after the Oct 2024 specs kio is generated from. Our registry takes the
# 4.1 definitions first (see the protocol core's commit), so kio's values are compared under
# the 4.1 names; the wire layout at these versions is unchanged.
#   api key 74: ListClientMetricsResources → ListConfigResources (KIP-1142), with its response
#   array ClientMetricsResources → ConfigResources and the entries' Name → ResourceName.
API_RENAMES = {"ListClientMetricsResources": "ListConfigResources"}
FIELD_RENAMES: dict[str, dict[tuple[str, ...], str]] = {
    "ListClientMetricsResourcesResponse": {
        ("client_metrics_resources",): "config_resources",
        ("client_metrics_resources", "name"): "resource_name",
    },
}


def _rename(value, renames: dict[tuple[str, ...], str], path: tuple[str, ...] = ()):
    if isinstance(value, list):
        return [_rename(v, renames, path) for v in value]
    if isinstance(value, dict):
        return {renames.get((*path, k), k): _rename(v, renames, (*path, k)) for k, v in value.items()}
    return value


def _params():
    for api_key, name, version, direction in CASES:
        marks = []
        reason = KNOWN_BAD.get((name, version, direction))
        if reason:
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        yield pytest.param(api_key, name, version, direction, marks=marks, id=f"{name}-v{version}-{direction}")


def _schema(name: str, version: int, direction: str):
    from kio.index import load_entity_schema
    from kio.static.constants import EntityType

    return load_entity_schema(name, version, EntityType[direction])


def _header_schema(kind: str, version: int):
    import importlib

    module = importlib.import_module(f"kio.schema.{kind}_header.v{version}.header")
    return module.RequestHeader if kind == "request" else module.ResponseHeader


def _write(entity_cls, value) -> bytes:
    from kio.serial import entity_writer

    buf = io.BytesIO()
    entity_writer(entity_cls)(buf, value)
    return buf.getvalue()


def _frame(got: dict) -> dict:
    """Everything but the body: any extra key (trailing_bytes, a fallback note) is a failure."""
    return {k: v for k, v in got.items() if k != "body"}


@needs_upstream
@pytest.mark.parametrize("api_key,name,version,direction", list(_params()))
@ORACLE_SETTINGS
@given(data=st.data())
def test_kio_oracle(api_key, name, version, direction, data):
    kps = decoder()
    cls = _schema(name, version, direction)
    spec = n.load_spec(str(OCT_2024), cls.__name__)
    message = data.draw(kio_entity(cls), label="kio message")
    expected_body = n.kio_to_ours(message, spec["fields"], n.common_structs(spec))
    expected_body = _rename(expected_body, FIELD_RENAMES.get(cls.__name__, {}))

    if direction == "request":
        hv = request_header_version(api_key, version, cls.__flexible__)
        header_cls = _header_schema("request", hv)
        assert header_cls is cls.__header_schema__, "header rule disagrees with kio"
        header = data.draw(kio_request_header(header_cls, api_key, version), label="header")
        payload = _write(header_cls, header) + _write(cls, message)
        got = kps.decode_request(payload)
        expected = {
            "api_key": api_key,
            "api_name": API_RENAMES.get(api_name(cls.__name__), api_name(cls.__name__)),
            "api_version": version,
            "correlation_id": int(header.correlation_id),
            "client_id": getattr(header, "client_id", None),
        }
        problems = n.diff(expected, _frame(got), "frame")
    else:
        hv = response_header_version(api_key, cls.__flexible__)
        header_cls = _header_schema("response", hv)
        assert header_cls is cls.__header_schema__, "header rule disagrees with kio"
        correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1), label="correlation_id")
        payload = _write(header_cls, header_cls(correlation_id=correlation_id)) + _write(cls, message)
        got = kps.decode_response(payload, api_key, version)
        expected = {"api_key": api_key, "api_version": version, "correlation_id": correlation_id}
        problems = n.diff(expected, _frame(got), "frame")
    problems += n.diff(expected_body, got.get("body"))
    assert not problems, f"{name} v{version} {direction} payload={payload.hex()}\n" + "\n".join(problems)
