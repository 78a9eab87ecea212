"""Exchange rows: the columns of the exchanges view, from an ``Exchange``.

Besides the exchange's own fields, ``error_codes`` lists the distinct non-zero error codes found
anywhere in the response (top level, per topic, per partition), so that "which requests failed
and why" is one query even for APIs that report errors per partition; ``error_names`` gives their
Kafka names, and ``outcome`` says whether the exchange did what was asked: ``ok``, or
``error_response`` when the transport was fine (status ``ok``) but the broker answered with an
error code, ``peer_quirk`` for a ``malformed`` frame that a known peer's deviation explains (its
body decoded, real clients accept it), or else the status itself (``malformed``, ``unanswered``, ...).
``request_packet`` and ``response_packet`` number the packets that carried each side's first
byte as Wireshark does (from 1, in their file: ``response_file`` where the response's is another).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from operator import attrgetter

from ..capture import packet_number
from ..framing.quirks import known_deviation
from ..spec.error_codes import error_name
from .outcomes import ResponseErrorCodes, exchange_error_codes
from .variant_spec import BodyEncoder, BodyEncoders

EXCHANGE_COLUMNS = (
    "capture_file",
    "connection_id",
    "client_address",
    "broker_address",
    "request_time",
    "response_time",
    "latency_ms",
    "api_key",
    "api_name",
    "api_version",
    "correlation_id",
    "client_id",
    "request_size",
    "response_size",
    "status",
    "error",
    "note",
    "request_packet",
    "response_packet",
    "response_file",
    "request",
    "response",
)
# Columns of packet indices in their file, shown as Wireshark numbers the packets (from 1).
PACKET_COLUMNS = ("request_packet", "response_packet")
OK, ERROR_RESPONSE, PEER_QUIRK = "ok", "error_response", "peer_quirk"
BODY_COLUMNS = ("request", "response")
SCALAR_COLUMNS = tuple(name for name in EXCHANGE_COLUMNS if name not in BODY_COLUMNS)
scalar_values = attrgetter(*SCALAR_COLUMNS)  # an exchange's SCALAR_COLUMNS, as one tuple
_GETTERS = [(name, attrgetter(name)) for name in EXCHANGE_COLUMNS]


def exchange_columns(
    exchanges: list, corrupt_column: str | None = None, response_codes: ResponseErrorCodes | None = None
) -> dict[str, list]:
    """The exchanges view's columns of ``exchanges``, a list of values per column: what a batch of
    rows is built from (each plain column read by one ``map``, not row by row). ``response_codes``:
    finds the error codes through the spec (the same codes, found faster)."""
    columns = {name: list(map(get, exchanges)) for name, get in _GETTERS}
    number_packets(columns)
    add_outcomes(columns, [exchange_error_codes(ex, response_codes) for ex in exchanges])
    if corrupt_column:
        columns[corrupt_column] = list(map(corrupt_record, exchanges))
    return columns


def number_packets(columns: dict[str, list]) -> None:
    """The packet columns as numbers (``frame.number`` in Wireshark and tshark), not indices."""
    for name in PACKET_COLUMNS:
        columns[name] = [None if index is None else packet_number(index) for index in columns[name]]


def add_outcomes(columns: dict[str, list], codes: list[list[int] | None]) -> None:
    """Adds the columns that follow from each row's error codes and its ``status`` column."""
    columns["error_codes"] = codes
    columns["error_names"] = [[error_name(c) for c in found] if found is not None else None for found in codes]
    nothing = [None] * len(codes)
    columns["outcome"] = list(
        map(outcome, columns["status"], codes, columns.get("note") or nothing, columns.get("error") or nothing)
    )


def corrupt_record(ex) -> bytes | None:
    """What the corrupt-record column holds: the bytes that did not decode (request first)."""
    return ex.raw_request if ex.raw_request is not None else ex.raw_response


def exchange_row(ex, corrupt_column: str | None = None, response_codes: ResponseErrorCodes | None = None) -> dict:
    """One exchange's row, keyed by column."""
    return {name: values[0] for name, values in exchange_columns([ex], corrupt_column, response_codes).items()}


def outcome(status: str, codes: list[int] | None, note: str | None = None, error: str | None = None) -> str:
    """``error_response`` for an answer with an error code, ``peer_quirk`` for a frame that does
    not match the spec in a way a known peer's does and real clients accept (its body decoded,
    its note says which), else the status."""
    if known_deviation(status, error, note):
        return ERROR_RESPONSE if codes else PEER_QUIRK
    if status == OK and codes:
        return ERROR_RESPONSE
    return status


def body_specs(encoders: BodyEncoders) -> dict[str, Callable[[Mapping[str, list], int], list[BodyEncoder | None]]]:
    """Per body column, given a batch's columns and its row count: the encoder compiled for each
    row's message version (None where the batch has no api key or version column)."""

    def specs(of: Callable, columns: Mapping[str, list], n: int) -> list[BodyEncoder | None]:
        keys, versions = columns.get("api_key"), columns.get("api_version")
        return [None] * n if keys is None or versions is None else list(map(of, keys, versions))

    return {"request": partial(specs, encoders.request), "response": partial(specs, encoders.response)}
