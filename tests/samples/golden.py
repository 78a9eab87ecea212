"""Golden outputs: a stable JSON-lines rendering of what ``read_capture`` makes of a sample capture.

Owns the rendering (one JSON object per exchange, keys sorted; bytes as ``{"$bytes": base64}``,
datetimes as ISO-8601 strings, the capture file relative to ``sample_captures/``) and where the
golden file of a sample lives. A capture whose rendering would exceed ``MAX_GOLDEN_BYTES`` keeps
only the first ``TRIM_BYTES`` of each longer bytes value, marked with ``"$length"``: the golden
stays reviewable, and records are checked in full by ``test_records_produced``.

Refresh with ``KAFKA_WIRE_UPDATE_GOLDEN=1 pytest tests/samples/test_golden.py`` (see the README).
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import fields
from datetime import datetime
from pathlib import Path

from kafka_protocol_source import Exchange

from .catalog import SAMPLES

UPDATE_ENV = "KAFKA_WIRE_UPDATE_GOLDEN"
MAX_GOLDEN_BYTES = 300 * 1024
TRIM_BYTES = 64


def updating() -> bool:
    return os.environ.get(UPDATE_ENV, "") not in ("", "0")


def golden_path(name: str) -> Path:
    return SAMPLES / f"{name}.golden.jsonl"


def jsonable(value, trim: int | None = None):
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        if trim is not None and len(value) > trim:
            return {"$bytes": base64.b64encode(value[:trim]).decode(), "$length": len(value)}
        return {"$bytes": base64.b64encode(value).decode()}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v, trim) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, trim) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"no JSON rendering for {type(value).__name__}: {value!r}")


# Which stream bytes a row holds (the accounting check verifies these) and where it completed (streaming).
# (response_file: a sample is one file, so it is always None; tests/stream/test_clocks_apart.py)
_CHECKED_ELSEWHERE = frozenset({"request_span", "response_span", "completed_at", "response_file"})


def render(e: Exchange, trim: int | None = None) -> dict:
    row = {f.name: jsonable(getattr(e, f.name), trim) for f in fields(e) if f.name not in _CHECKED_ELSEWHERE}
    path = Path(e.capture_file)
    row["capture_file"] = path.relative_to(SAMPLES).as_posix() if path.is_relative_to(SAMPLES) else path.name
    return row


def render_lines(exchanges, trim: int | None = None) -> list[str]:
    lines = [json.dumps(render(e, trim), sort_keys=True, ensure_ascii=False) for e in exchanges]
    if trim is None and sum(len(line) + 1 for line in lines) > MAX_GOLDEN_BYTES:
        return render_lines(exchanges, TRIM_BYTES)
    return lines
