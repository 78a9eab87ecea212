"""Exchange rows: the columns of the exchanges view, from an ``Exchange``.

Besides the exchange's own fields, ``error_codes`` lists the distinct non-zero error codes found
anywhere in the response (top level, per topic, per partition), so that "which requests failed
and why" is one query even for APIs that report errors per partition; ``error_names`` gives their
Kafka names, and ``outcome`` says whether the exchange did what was asked: ``ok``, or
``error_response`` when the transport was fine (status ``ok``) but the broker answered with an
error code, or else the status itself (``malformed``, ``unanswered``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

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
    "request",
    "response",
)
OK, ERROR_RESPONSE = "ok", "error_response"
_COLUMN_VALUES = attrgetter(*EXCHANGE_COLUMNS)  # one call for all of them: this runs once per row


def exchange_row(ex, corrupt_column: str | None = None, response_codes: ResponseErrorCodes | None = None) -> dict:
    """``response_codes``: finds the error codes through the spec (the same codes, found faster)."""
    row = dict(zip(EXCHANGE_COLUMNS, _COLUMN_VALUES(ex), strict=True))
    codes = exchange_error_codes(ex, response_codes)
    row["error_codes"] = codes
    row["error_names"] = [error_name(c) for c in codes] if codes is not None else None
    row["outcome"] = outcome(ex.status, codes)
    if corrupt_column:
        row[corrupt_column] = ex.raw_request if ex.raw_request is not None else ex.raw_response
    return row


def outcome(status: str, codes: list[int] | None) -> str:
    if status == OK and codes:
        return ERROR_RESPONSE
    return status


def body_specs(encoders: BodyEncoders) -> dict[str, Callable[[dict], BodyEncoder | None]]:
    """Per body column of an exchange row, the encoder compiled for its message version."""
    return {
        "request": lambda row: encoders.request(row["api_key"], row["api_version"]),
        "response": lambda row: encoders.response(row["api_key"], row["api_version"]),
    }
