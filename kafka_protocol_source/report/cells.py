"""How one value of a report query reads in a table cell: times, durations, bytes, latencies, counts.

Owns text formatting only, chosen by the column's name (``*_us`` times, ``*_bytes``, ``*_ms``,
``*_per_s``, ``span_s``). The exact value stays beside the text in the cell's ``data-value``.
"""

from __future__ import annotations

from datetime import datetime, timezone

MISSING = "–"


def cell_text(column: str, value) -> str:
    if value is None:
        return MISSING
    if column.endswith("_us") and isinstance(value, int):
        return utc_time(value)
    if column.endswith("_bytes"):
        return byte_size(value)
    if column == "span_s":
        return duration(value)
    if column.endswith("_ms"):
        return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"
    if column.endswith("_per_s"):
        return f"{value:,.3g}" if value < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value) if value != "" else MISSING


def utc_time(micros: int, *, with_date: bool = True) -> str:
    t = datetime.fromtimestamp(micros / 1e6, tz=timezone.utc)
    text = t.strftime("%Y-%m-%d %H:%M:%S.%f" if with_date else "%H:%M:%S.%f")
    return text[:-3]  # milliseconds


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def byte_size(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:,} B"
