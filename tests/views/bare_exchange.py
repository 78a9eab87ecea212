"""An exchange as the records view reads it, without a capture: its api, version and bodies."""

from __future__ import annotations

from types import SimpleNamespace


def bare_exchange(api_key: int, api_version: int, request: dict | None, response: dict | None) -> SimpleNamespace:
    return SimpleNamespace(
        api_key=api_key,
        api_version=api_version,
        request=request,
        response=response,
        client_id="c",
        client_address="a",
        broker_address="b",
        request_time=None,
        response_time=None,
        capture_file="f.pcap",
        connection_id="x",
        status="ok",
        error=None,
        request_size=None,
        response_size=None,
        raw_request=None,
        raw_response=None,
    )
