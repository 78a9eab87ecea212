"""Result writers without Spark: a DataFrame stand-in gives rows the way PySpark does (Row, VariantVal)."""

from __future__ import annotations

import csv
import datetime
import io
import json

import pytest
from pyspark.sql import Row
from pyspark.sql.types import VariantVal

from kafka_protocol_source.cli.output import (
    PARQUET,
    Destination,
    csv_text,
    destination_for,
    json_value,
    render_table,
    table_text,
    write_csv,
    write_json_lines,
    write_table,
)
from kafka_protocol_source.views.variant import to_variant


class FakeFrame:
    def __init__(self, columns, rows):
        self.columns, self.rows = columns, [Row(**dict(zip(columns, r, strict=True))) for r in rows]

    def toLocalIterator(self, prefetchPartitions=False):
        return iter(self.rows)


def variant(value) -> VariantVal:
    data, metadata = to_variant(value)
    return VariantVal(data, metadata)


WHEN = datetime.datetime(2026, 11, 22, 0, 34, 43, 712504)  # naive, as PySpark gives it (the command runs in UTC)
COLUMNS = ["api_name", "error_codes", "error_names", "request_time", "key", "response", "headers"]
ROWS = [
    (
        "Produce",
        [59],
        ["UNKNOWN_PRODUCER_ID"],
        WHEN,
        b"k\x00\xff",
        variant({"a": [1, "x"], "b": b"\x01"}),
        [Row(key="h", value=b"v")],
    ),
    ("Metadata", [], [], None, None, None, []),
]


def test_csv_writes_arrays_structs_and_variants_as_json_text():
    out = io.StringIO()
    assert write_csv(FakeFrame(COLUMNS, ROWS), out) == 2
    header, first, second = list(csv.reader(io.StringIO(out.getvalue())))
    assert header == COLUMNS
    assert first[:4] == ["Produce", "[59]", '["UNKNOWN_PRODUCER_ID"]', "2026-11-22T00:34:43.712504+00:00"]
    assert first[4] == "awD/"  # base64 of the key's bytes
    assert json.loads(first[5]) == {"a": [1, "x"], "b": "AQ=="}
    assert json.loads(first[6]) == [{"key": "h", "value": "dg=="}]
    assert second == ["Metadata", "[]", "[]", "", "", "", "[]"]


def test_csv_tells_a_null_from_an_empty_value():
    out = io.StringIO()
    write_csv(FakeFrame(["key", "value", "note"], [(None, b"", 'a "b", c'), (b"", None, "")]), out)
    assert out.getvalue().splitlines() == ["key,value,note", ',"","a ""b"", c"', '"",,""']
    assert list(csv.reader(io.StringIO(out.getvalue())))[1:] == [["", "", 'a "b", c'], ["", "", ""]]
    out = io.StringIO()  # one column: a null is no empty line, which readers skip
    write_csv(FakeFrame(["key"], [(b"k",), (None,), (b"",)]), out)
    assert list(csv.DictReader(io.StringIO(out.getvalue()))) == [{"key": "aw=="}, {"key": ""}, {"key": ""}]


def test_json_lines_keep_types():
    out = io.StringIO()
    assert write_json_lines(FakeFrame(COLUMNS, ROWS), out) == 2
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["error_codes"] == [59] and first["error_names"] == ["UNKNOWN_PRODUCER_ID"]
    assert first["response"] == {"a": [1, "x"], "b": "AQ=="}
    assert second == {
        "api_name": "Metadata",
        "error_codes": [],
        "error_names": [],
        "request_time": None,
        "key": None,
        "response": None,
        "headers": [],
    }


def test_table_says_how_many_rows_it_left_out():
    frame = FakeFrame(["n", "name"], [(i, f"row{i}") for i in range(25)])
    out = io.StringIO()
    assert write_table(frame, out, max_rows=10) == 10
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["n", "name"] and len(lines) == 2 + 10 + 1
    assert lines[-1] == "(25 rows, 15 not shown: --max-rows 0 shows all, --format csv or json writes all)"
    out = io.StringIO()
    assert write_table(frame, out, max_rows=0) == 25
    assert out.getvalue().splitlines()[-1] == "(25 rows)"


def test_table_cells_are_one_short_line():
    assert table_text(None) == "NULL"
    assert table_text(b"plain text") == "plain text" and table_text(b"\x00\xff") == "0x00ff"
    assert table_text(b"0x00ff") == "0x307830306666"  # text that reads as hex is shown as hex
    assert table_text("a\nb") == "a\\nb"
    long = table_text("x" * 500)
    assert len(long) == 80 and long.endswith("…")
    assert table_text(WHEN) == "2026-11-22 00:34:43.712504"


def test_a_table_shows_binary_inside_arrays_and_structs_as_it_shows_a_key():
    headers = [Row(key="trace-id", value=b"trace/tansu-1"), Row(key="raw", value=b"\x00\x01")]
    assert table_text(headers) == '[{"key":"trace-id","value":"trace/tansu-1"},{"key":"raw","value":"0x0001"}]'
    assert csv_text(headers) == '[{"key":"trace-id","value":"dHJhY2UvdGFuc3UtMQ=="},{"key":"raw","value":"AAE="}]'


def test_render_table_aligns_numbers_right():
    text = render_table(["api", "n"], [["Produce", "5"], ["ApiVersions", "15"]], [False, True])
    assert text.splitlines() == ["api           n", "-----------  --", "Produce       5", "ApiVersions  15"]


@pytest.mark.parametrize(
    ("output", "fmt", "expected"),
    [
        (None, None, Destination("table")),
        (None, "csv", Destination("csv")),
        ("-", "json", Destination("json")),
        ("out.csv", None, Destination("csv", "out.csv")),
        ("out.jsonl", None, Destination("json", "out.jsonl")),
        ("out.parquet", None, Destination(PARQUET, "out.parquet")),
        ("results/", None, Destination(PARQUET, "results/")),
        ("out.txt", "csv", Destination("csv", "out.txt")),
    ],
)
def test_destination_follows_the_path(output, fmt, expected):
    assert destination_for(output, fmt) == expected


def test_an_existing_directory_is_parquet_and_a_conflicting_format_is_an_error(tmp_path):
    assert destination_for(str(tmp_path), None) == Destination(PARQUET, str(tmp_path))
    with pytest.raises(ValueError, match="is written as parquet, not as --format csv"):
        destination_for("x.parquet", "csv")


def test_json_value_of_nested_rows_and_dates():
    assert json_value(Row(a=Row(b=[b"\x01"]), d=datetime.date(2026, 1, 2))) == {"a": {"b": ["AQ=="]}, "d": "2026-01-02"}
    assert csv_text(True) == "True" and csv_text({1: "x"}) == '{"1":"x"}'
