"""Read an HTML report back: its tables, summary figures, chart marks and embedded data, as values.

Only what the page states in markup (``data-*`` attributes and the JSON data element); nothing
here knows how the report is computed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from html.parser import HTMLParser

from kafka_protocol_source.report.html import DATA_ELEMENT_ID


@dataclass
class ReadReport:
    tables: dict = field(default_factory=dict)  # query -> list of {column: value}
    empty_tables: set = field(default_factory=set)  # queries shown as "no rows" notes
    cards: dict = field(default_factory=dict)  # summary column -> value
    marks: dict = field(default_factory=lambda: defaultdict(list))  # chart id -> [(series, x, value)]
    data: dict | None = None  # the embedded JSON
    element_counts: dict = field(default_factory=lambda: defaultdict(int))


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__()
        self.report = ReadReport()
        self._table = self._row = self._chart = None
        self._in_data = False
        self._data_text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.report.element_counts[tag] += 1
        if tag == "table" and "data-query" in a:
            self._table = self.report.tables.setdefault(a["data-query"], [])
        elif tag == "p" and a.get("data-rows") == "0":
            self.report.empty_tables.add(a["data-query"])
        elif tag == "tr" and self._table is not None:
            self._row = {}
        elif tag == "td" and self._row is not None:
            self._row[a["data-column"]] = json.loads(a["data-value"])
        elif tag == "div" and a.get("data-query") == "summary":
            self.report.cards[a["data-column"]] = json.loads(a["data-value"])
        elif tag == "svg" and "data-chart" in a:
            self._chart = a["data-chart"]
            self.report.marks.setdefault(self._chart, [])
        elif "data-value" in a and self._chart is not None:
            self.report.marks[self._chart].append((a["data-series"], a["data-x"], json.loads(a["data-value"])))
        elif tag == "script" and a.get("id") == DATA_ELEMENT_ID:
            self._in_data = True

    def handle_endtag(self, tag):
        if tag == "tr" and self._row:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "svg":
            self._chart = None
        elif tag == "script" and self._in_data:
            self._in_data = False
            self.report.data = json.loads("".join(self._data_text))

    def handle_data(self, data):
        if self._in_data:
            self._data_text.append(data)


def read_report(html: str) -> ReadReport:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader.report
