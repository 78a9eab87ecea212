"""Writing query results: a table for the terminal, CSV, JSON lines, or Parquet.

Table output shows at most ``max_rows`` rows and then says how many it left out; CSV and JSON
write every row, streamed partition by partition. Values that CSV cannot hold as they are
(arrays, structs, maps, VARIANT) become JSON text, as in the JSON output: binary as base64,
timestamps as ISO 8601 in UTC (the command runs with TZ=UTC, so PySpark's naive datetimes are
UTC). In CSV a null is an empty field and an empty value ``""``, as Spark's CSV writes them. A
table shows binary as text where it is printable UTF-8 (keys, values, header values such as
trace ids) and does not begin with ``0x``, else as ``0x`` and hex, inside arrays and structs
too. Parquet is written by Spark itself (VARIANT columns included).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import os
from dataclasses import dataclass

FORMATS = ("table", "csv", "json")
PARQUET = "parquet"
STDOUT = "-"
DEFAULT_MAX_ROWS = 1000
MAX_CELL_WIDTH = 80
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
_HEX_MARK = "0x"


@dataclass(frozen=True)
class Destination:
    """Where one query's result goes: ``path`` None is stdout."""

    format: str
    path: str | None = None


def destination_for(output: str | None, fmt: str | None) -> Destination:
    """The format a path asks for (``.parquet`` or a directory is Parquet), checked against ``--format``.

    ``output`` None or ``-`` is stdout."""
    if output is None or output == STDOUT:
        return Destination(fmt or "table")
    lower = output.lower()
    implied = None
    if lower.endswith(".parquet") or lower.endswith(os.sep) or os.path.isdir(output):
        implied = PARQUET
    elif lower.endswith(".csv"):
        implied = "csv"
    elif lower.endswith(_JSON_SUFFIXES):
        implied = "json"
    if implied and fmt and fmt != implied:
        raise ValueError(f"--output {output} is written as {implied}, not as --format {fmt}")
    # (said before Spark starts and the queries run, not after the ones before it were printed)
    if implied == PARQUET and os.path.isdir(output) and os.listdir(output):
        raise ValueError(f"--output {output}: the directory exists and is not empty (Parquet is written to a new one)")
    folder = os.path.dirname(os.path.abspath(output))
    if implied != PARQUET and not os.path.isdir(folder):
        raise ValueError(f"--output {output}: no directory {folder}")
    return Destination(implied or fmt or "table", output)


# -- values as text ---------------------------------------------------------------------


def _base64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def json_value(value, binary=_base64):
    """A Spark value as what ``json.dumps`` takes, losing nothing (``binary``: how bytes are
    written, base64 unless a table shows them)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return binary(bytes(value))
    if isinstance(value, (datetime.datetime, datetime.date)):
        return _iso(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "asDict"):  # a struct
        return {k: json_value(v, binary) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): json_value(v, binary) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v, binary) for v in value]
    if hasattr(value, "toJson"):  # VARIANT
        return json.loads(value.toJson())
    return str(value)


def csv_text(value, binary=_base64) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, int, float, str, decimal.Decimal)):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return _iso(value)
    plain = json_value(value, binary)
    return plain if isinstance(plain, str) else json.dumps(plain, separators=(",", ":"), ensure_ascii=False)


def _iso(value: datetime.date) -> str:
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.isoformat()


def table_text(value, width: int = MAX_CELL_WIDTH) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, datetime.datetime):
        text = str(value)
    else:
        text = csv_text(value, _bytes_text)
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= width else text[: width - 1] + "…"


def _bytes_text(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _HEX_MARK + raw.hex()
    # text that begins as hex does is shown as hex too: in a table, ``0x`` always means hex
    return text if text.isprintable() and not text.startswith(_HEX_MARK) else _HEX_MARK + raw.hex()


# -- writers ----------------------------------------------------------------------------


def render_table(columns: list[str], cells: list[list[str]], numeric: list[bool] | None = None) -> str:
    """Aligned columns under a header, numbers to the right."""
    numeric = numeric or [False] * len(columns)
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]

    def line(values):
        return "  ".join(
            v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(columns), "  ".join("-" * w for w in widths), *(line(row) for row in cells)])


def write_table(df, out, max_rows: int, quiet=contextlib.nullcontext) -> int:
    """Print up to ``max_rows`` rows (0: all) and a footer with the row count; returns rows shown.

    The rows are gathered first; ``quiet()`` is entered only to print them."""
    columns = df.columns
    rows, total = [], 0
    for row in df.toLocalIterator(prefetchPartitions=True):
        total += 1
        if not max_rows or total <= max_rows:
            rows.append(row)
    cells = [[table_text(v) for v in row] for row in rows]
    numeric = [
        any(r[i] is not None for r in rows) and all(_is_number(r[i]) for r in rows if r[i] is not None)
        for i in range(len(columns))
    ]
    hidden = total - len(rows)
    if hidden:
        footer = f"({total:,} rows, {hidden:,} not shown: --max-rows 0 shows all, --format csv or json writes all)"
    else:
        footer = f"({total:,} row{'' if total == 1 else 's'})"
    with quiet():
        out.write(render_table(columns, cells, numeric) + "\n" + footer + "\n")
        out.flush()
    return len(rows)


def _is_number(value) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def write_csv(df, out) -> int:
    out.write(csv_line(df.columns))
    n = 0
    for row in df.toLocalIterator(prefetchPartitions=True):
        out.write(csv_line([None if v is None else csv_text(v) for v in row]))
        n += 1
    return n


def csv_line(cells: list[str | None]) -> str:
    """One CSV record: a null cell empty, an empty one ``""`` (``csv.writer`` writes both alike
    before Python 3.12's QUOTE_NOTNULL); quoted where it holds a comma, quote or line break. A
    record of one null cell is ``""`` too: an empty line is no record to CSV readers."""
    if len(cells) == 1 and cells[0] is None:
        return '""\n'
    return ",".join(_csv_cell(c) for c in cells) + "\n"


def _csv_cell(cell: str | None) -> str:
    if cell is None:
        return ""
    if not cell or any(ch in cell for ch in ',"\n\r'):
        return '"' + cell.replace('"', '""') + '"'
    return cell


def write_json_lines(df, out) -> int:
    columns = df.columns
    n = 0
    for row in df.toLocalIterator(prefetchPartitions=True):
        out.write(json.dumps({c: json_value(v) for c, v in zip(columns, row, strict=True)}, ensure_ascii=False) + "\n")
        n += 1
    return n


def write_parquet(df, path: str) -> None:
    """A Parquet dataset (a directory of part files); an existing directory must be empty."""
    mode = "errorifexists"
    if os.path.isdir(path):
        if os.listdir(path):
            raise FileExistsError(f"--output {path}: the directory exists and is not empty")
        mode = "overwrite"
    elif os.path.exists(path):
        raise FileExistsError(f"--output {path}: a file of that name exists")
    df.write.mode(mode).parquet(path)


def write(df, destination: Destination, stdout, max_rows: int, quiet=contextlib.nullcontext) -> None:
    """Write ``df`` where ``destination`` says; ``quiet()`` is held while the terminal is written to
    (the progress line is wiped then), so queries run outside it where the writer allows."""
    if destination.format == PARQUET:
        assert destination.path is not None, "Parquet is chosen from a path"
        write_parquet(df, destination.path)
        return
    if destination.path is None:
        if destination.format == "table":
            write_table(df, stdout, max_rows, quiet)
            return
        with quiet():
            (write_csv if destination.format == "csv" else write_json_lines)(df, stdout)
            stdout.flush()
        return
    with open(destination.path, "w", encoding="utf-8", newline="") as f:
        if destination.format == "table":
            write_table(df, f, max_rows)
        else:
            (write_csv if destination.format == "csv" else write_json_lines)(df, f)
