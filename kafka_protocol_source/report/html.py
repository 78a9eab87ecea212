"""The self-contained HTML report: one file with its tables, inline SVG plots and the data behind them.

Owns the page: sections, tables, which chart shows which query. Every number comes from
``compute.compute_report`` (Spark SQL in ``queries.py``); nothing here counts or averages. The page
needs no network, script or external stylesheet to open. For readers and tests, each table cell
carries its query's exact value in ``data-value`` (JSON), tables and summary figures name their
query and column, and the query results and parameters are embedded whole as JSON in
``<script type="application/json" id="kafka-wire-report-data">`` (data, never run).
"""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict
from html import escape
from pathlib import Path

from ..views.exchanges import ERROR_RESPONSE
from .cells import cell_text, duration, utc_time
from .compute import ReportData, compute_report
from .queries import FINE_OUTCOMES, QUERIES
from .svg import PALETTE, Series, bar_chart, histogram, line_chart

DATA_ELEMENT_ID = "kafka-wire-report-data"
_HEADERS = {
    "not_fine": "not ok",
    "client_ids": "client ids",
    "first_us": "first (UTC)",
    "last_us": "last (UTC)",
    "p50_ms": "p50 ms",
    "p90_ms": "p90 ms",
    "p99_ms": "p99 ms",
    "max_ms": "max ms",
}
_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px 32px; color: #1d232a;
       max-width: 1180px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #dde1e5;
padding-bottom: 4px; } h3 { font-size: 14px; margin: 16px 0 6px; }
.sub { color: #5b6770; font-size: 13px; margin: 0 0 14px; }
.cards { display: grid; grid-template-columns: repeat(5, 1fr); gap: 10px; }
.card { border: 1px solid #dde1e5; border-radius: 6px; padding: 8px 10px; }
.card .n { font-size: 20px; font-weight: 600; } .card .k { font-size: 12px; color: #5b6770; }
.card.bad .n { color: #b3261e; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0 8px; }
th, td { border-bottom: 1px solid #e6e9ec; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f7; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.bad { color: #b3261e; font-weight: 600; }
.grid { display: flex; flex-wrap: wrap; gap: 8px 12px; } .note { color: #5b6770; font-size: 12px; }
details pre { background: #f6f8fa; padding: 8px; font-size: 11px; overflow-x: auto; }
"""


def write_html_report(
    spark, exchanges, records, path, *, title: str = "kafka-wire report", top: int = 10
) -> ReportData:
    """Compute the report over the ``exchanges`` and ``records`` views (DataFrames) and write it to ``path``.

    ``top`` limits the clients, connections and topics tables. Returns what was
    computed, e.g. for a one-line summary on the terminal.
    """
    data = compute_report(spark, exchanges, records, top=top)
    Path(path).write_text(render_html(data, title=title), encoding="utf-8")
    return data


def render_html(data: ReportData, *, title: str = "kafka-wire report") -> str:
    r, s = data.results, data.summary
    span = (
        f"{utc_time(s['first_us'])} – {utc_time(s['last_us'])} UTC ({duration(s['span_s'])})"
        if s["first_us"] is not None
        else "no timestamps"
    )
    buckets = duration(data.params["bucket_us"] / 1e6)
    heading = (
        f'<h1>{escape(title)}</h1><p class="sub">{escape(span)} · {s["files"]} capture file(s) · '
        f"time buckets of {buckets}</p>"
    )
    outcomes_note = (
        f'<p class="note">ok: answered without an error code; fine as well: '
        f"{', '.join(FINE_OUTCOMES[1:])}. {ERROR_RESPONSE}: a response that decoded but carries "
        "a non-zero error code.</p>"
    )
    body = [
        heading,
        _summary_cards(s),
        "<h2>Outcomes</h2>",
        outcomes_note,
        _table("outcomes", r["outcomes"]),
        "<h3>Error codes in responses</h3>",
        _table("errors", r["errors"], empty="No response carries a non-zero error code."),
        "<h2>Over time</h2>",
        _timeline_charts(data),
        "<h2>Per API</h2>",
        _table("per_api", r["per_api"]),
        "<h3>Latency histograms (log₂ bins)</h3>",
        _histograms(r["latency_histogram"], [row["api"] for row in r["per_api"]]),
        "<h2>Per client id</h2>",
        _table("per_client", r["per_client"]),
        "<h2>Topics</h2>",
        '<p class="note">Bytes are record keys plus values, as produced or fetched. Records the broker'
        " refused (its error in the records view's error_name) are not produced: they are counted apart.</p>",
        _topic_chart(r["topics"]),
        _table("topics", r["topics"], empty="No records."),
        "<h2>Top connections</h2>",
        _table("top_connections", r["top_connections"]),
        "<h2>Capture files</h2>",
        _table("files", r["files"]),
        _queries_appendix(data),
    ]
    payload = json.dumps({"params": data.params, "results": data.results}).replace("</", "<\\/")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + f'\n<script type="application/json" id="{DATA_ELEMENT_ID}">{payload}</script>\n</body></html>\n'
    )


def _summary_cards(s: dict) -> str:
    cards = [
        ("files", "capture files"),
        ("connections", "connections"),
        ("client_ids", "client ids"),
        ("exchanges", "exchanges"),
        ("not_fine", "not ok"),
        ("produced_records", "records produced"),
        ("refused_records", "records refused"),
        ("fetched_records", "records fetched"),
        ("produced_bytes", "bytes produced (key+value)"),
        ("fetched_bytes", "bytes fetched (key+value)"),
        ("request_bytes", "request bytes"),
    ]
    out = []
    for column, label in cards:
        value = s[column]
        bad = " bad" if column == "not_fine" and value else ""
        out.append(
            f'<div class="card{bad}" data-query="summary" data-column="{column}" '
            f'data-value="{escape(json.dumps(value))}"><div class="n">{escape(cell_text(column, value))}</div>'
            f'<div class="k">{escape(label)}</div></div>'
        )
    return f'<div class="cards">{"".join(out)}</div>'


def _table(query: str, rows: list[dict], *, empty: str = "(none)") -> str:
    if not rows:
        return f'<p class="note" data-query="{query}" data-rows="0">{escape(empty)}</p>'
    columns = list(rows[0])
    head = "".join(f"<th>{escape(_HEADERS.get(c, c.replace('_', ' ')))}</th>" for c in columns)
    lines = []
    for row in rows:
        cells = []
        for c in columns:
            value = row[c]
            css = "num" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
            if (c == "not_fine" and value) or (c == "outcome" and value not in FINE_OUTCOMES):
                css += " bad"
            text = cell_text(c, value)
            cells.append(
                f'<td class="{css.strip()}" data-column="{escape(c)}" '
                f'data-value="{escape(json.dumps(value))}">{escape(text)}</td>'
            )
        lines.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<table data-query="{query}" data-rows="{len(rows)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(lines)}</tbody></table>"
    )


def _timeline_charts(data: ReportData) -> str:
    timeline, records = data.results["timeline"], data.results["record_timeline"]
    if not timeline:
        return '<p class="note">No timed exchanges.</p>'
    xs = [row["bucket_start_us"] for row in timeline]
    whole_seconds = data.params["bucket_us"] % 1_000_000 == 0
    labels = [utc_time(x, with_date=False)[: -4 if whole_seconds else None] for x in xs]

    def series(rows, column, name, color):
        return Series(name, [row[column] for row in rows], color)

    return "\n".join(
        [
            line_chart(
                xs,
                labels,
                [
                    series(timeline, "exchanges_per_s", "exchanges/s", PALETTE[0]),
                    series(timeline, "not_fine_per_s", "not ok/s", PALETTE[1]),
                ],
                chart_id="timeline-rate",
                title="Request rate",
                y_unit="per second",
            ),
            line_chart(
                xs,
                labels,
                [
                    series(timeline, "p50_ms", "p50", PALETTE[0]),
                    series(timeline, "p99_ms", "p99", PALETTE[1]),
                    series(timeline, "max_ms", "max", PALETTE[5]),
                ],
                chart_id="timeline-latency",
                title="Latency (log scale)",
                y_unit="ms",
                log_y=True,
            ),
            line_chart(
                [row["bucket_start_us"] for row in records],
                labels,
                [
                    series(records, "produced_per_s", "produced records/s", PALETTE[2]),
                    series(records, "fetched_per_s", "fetched records/s", PALETTE[3]),
                ],
                chart_id="timeline-records",
                title="Record rates",
                y_unit="records per second",
            ),
        ]
    )


def _histograms(rows: list[dict], api_order: list[str]) -> str:
    if not rows:
        return '<p class="note">No timed exchanges.</p>'
    by_api: dict[str, dict[int, int]] = defaultdict(dict)
    for row in rows:
        by_api[row["api"]][row["bin"]] = row["exchanges"]
    bins = range(min(row["bin"] for row in rows), max(row["bin"] for row in rows) + 1)
    labels = [f"{_ms(2.0**b)}–{_ms(2.0 ** (b + 1))}" for b in bins]
    apis = sorted(by_api, key=lambda a: (api_order.index(a) if a in api_order else len(api_order), a))
    charts = [
        histogram(
            labels,
            [by_api[api].get(b, 0) for b in bins],
            chart_id=f"latency-histogram-{api}",
            title=api,
            color=PALETTE[i % len(PALETTE)],
        )
        for i, api in enumerate(apis)
    ]
    return f'<div class="grid">{"".join(charts)}</div>'


def _topic_chart(rows: list[dict]) -> str:
    if not rows:
        return ""
    topics = [row["topic"] for row in rows]
    return bar_chart(
        topics,
        [
            Series("produced bytes", [row["produced_bytes"] for row in rows], PALETTE[2]),
            Series("fetched bytes", [row["fetched_bytes"] for row in rows], PALETTE[3]),
        ],
        chart_id="topic-bytes",
        title="Bytes per topic",
        unit="bytes",
    )


def _queries_appendix(data: ReportData) -> str:
    params = ", ".join(f":{k} = {v}" for k, v in data.params.items())
    sections = "".join(
        f"<h3>{escape(name)}</h3><pre>{escape(textwrap.dedent(sql).strip())}</pre>" for name, sql in QUERIES.items()
    )
    return (
        f"<h2>How these numbers were computed</h2><details><summary>The Spark SQL behind every table and "
        f"chart ({escape(params)}; {{exchanges}} and {{records}} are the two views)</summary>{sections}</details>"
    )


def _ms(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.3g}µs"
    return f"{value:.4g}ms" if value < 1000 else f"{value / 1000:.3g}s"
