"""Exchange rows: the columns of the exchanges view, from an ``Exchange``.

Besides the exchange's own fields, ``error_codes`` lists the distinct non-zero error codes found
anywhere in the response (top level, per topic, per partition), so that "which requests failed
and why" is one query even for APIs that report errors per partition.
"""

from __future__ import annotations

from ..views.outcomes import error_codes

EXCHANGE_COLUMNS = ("capture_file", "connection_id", "client_address", "broker_address", "request_time",
                    "response_time", "latency_ms", "api_key", "api_name", "api_version", "correlation_id",
                    "client_id", "request_size", "response_size", "status", "error", "note", "request", "response")


def exchange_row(ex, corrupt_column: str | None = None) -> dict:
    row = {name: getattr(ex, name) for name in EXCHANGE_COLUMNS}
    row["error_codes"] = error_codes(ex.response) if ex.response else None
    if corrupt_column:
        row[corrupt_column] = ex.raw_request if ex.raw_request is not None else ex.raw_response
    return row
