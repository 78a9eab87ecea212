"""The HTML report, written by ``python -m kafka_protocol_source.report`` over two sample captures.

Its numbers are read back from the page (tables, summary figures, chart marks, embedded data)
and compared with the report's SQL run here, in this process, over the same captures. Then
the page is opened in a real headless Chromium: the rendered DOM must hold the tables and
plots, and the screenshot is kept under test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from kafka_protocol_source.report.compute import ReportData, collect_rows
from kafka_protocol_source.report.html import render_html
from kafka_protocol_source.report.queries import QUERIES, bucket_width_us, run_query
from kafka_protocol_source.report.svg import PALETTE

from ..conftest import ROOT, SAMPLES
from .reading import read_report

# A librdkafka mock session (malformed ApiVersions answers, UNSUPPORTED_VERSION, records both ways) and a
# Tansu session that refused every Produce with UNKNOWN_PRODUCER_ID: errors that decoded fine on the wire.
CAPTURES = [
    SAMPLES / "mock_confluent_kafka_all_codecs_any_sll2.pcap",
    SAMPLES / "tansu_kafka_python_legacy_magic1_rejected.pcap",
]
TABLES = ("outcomes", "errors", "per_api", "per_client", "top_connections", "topics", "files")
ARTIFACTS = ROOT / "test-artifacts"
TOP = 5  # below the number of clients and connections of the two captures, so the limit shows


@pytest.fixture(scope="module")
def report_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_protocol_source.report",
            *map(str, CAPTURES),
            "--html",
            str(path),
            "--top",
            str(TOP),
            "--master",
            "local[2]",
        ],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"wrote {path}" in result.stderr
    return path


@pytest.fixture(scope="module")
def page(report_path):
    return read_report(report_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def expected(spark):
    """Every report query, run here over the same captures."""
    from kafka_protocol_source.spark import register

    register(spark)
    paths = [str(p) for p in CAPTURES]
    exchanges = spark.read.format("kafka-wire").load(paths)
    records = spark.read.format("kafka-wire").option("view", "records").load(paths)
    summary = collect_rows(run_query(spark, "summary", exchanges, records, {}))
    params = {"top": TOP, "bucket_us": bucket_width_us(summary[0]["span_s"])}
    results = {name: collect_rows(run_query(spark, name, exchanges, records, params)) for name in QUERIES}
    return ReportData(params=params, results=results)


def test_embedded_data_is_every_query_result(page, expected):
    assert page.data["params"] == expected.params
    assert set(page.data["results"]) == set(QUERIES)
    for name in QUERIES:
        assert page.data["results"][name] == expected.results[name], name


def test_tables_and_summary_figures_show_the_query_results(page, expected):
    for name in TABLES:
        rows = expected.results[name]
        if rows:
            assert page.tables[name] == rows, name
        else:
            assert name in page.empty_tables, name
    assert page.cards and all(value == expected.summary[column] for column, value in page.cards.items())
    assert len(page.tables["per_client"]) == TOP < expected.summary["client_ids"]


def test_charts_plot_the_query_results(page, expected):
    r = expected.results
    rate = [(x, v) for series, x, v in page.marks["timeline-rate"] if series == "exchanges/s"]
    assert rate and rate == [(str(row["bucket_start_us"]), row["exchanges_per_s"]) for row in r["timeline"]]
    p99 = [(x, v) for series, x, v in page.marks["timeline-latency"] if series == "p99"]
    assert p99 and p99 == [(str(row["bucket_start_us"]), row["p99_ms"]) for row in r["timeline"] if row["p99_ms"]]
    fetched = [v for series, _, v in page.marks["timeline-records"] if series == "fetched records/s"]
    assert fetched and fetched == [row["fetched_per_s"] for row in r["record_timeline"]]
    produced_bytes = {x: v for series, x, v in page.marks["topic-bytes"] if series == "produced bytes"}
    assert produced_bytes and produced_bytes == {row["topic"]: row["produced_bytes"] for row in r["topics"]}

    bars = defaultdict(list)
    for row in r["latency_histogram"]:
        bars[row["api"]].append(row["exchanges"])
    assert {f"latency-histogram-{api}" for api in bars} == {c for c in page.marks if c.startswith("latency-histogram-")}
    for api, counts in bars.items():
        drawn = [v for _, _, v in page.marks[f"latency-histogram-{api}"]]
        assert [v for v in drawn if v] == counts, api


def test_refused_exchanges_count_as_not_ok_and_a_peer_s_known_quirk_does_not(expected):
    """Facts of the two sessions (sample_captures/README.md), independent of the report's SQL."""
    produced = [json.loads(p.with_suffix(".produced.json").read_text())["records"] for p in CAPTURES]
    refused_requests = len({r["codec"] for r in produced[1] if r.get("error")})  # one producer, one Produce per codec
    r = expected.results
    outcomes = {row["outcome"]: row["exchanges"] for row in r["outcomes"]}
    assert refused_requests == 4
    # the mock's 25 ApiVersions/Metadata answers with bytes appended (a known quirk, not broken
    # traffic): 13 answer UNSUPPORTED_VERSION, 12 did what was asked
    assert outcomes["error_response"] == refused_requests + 13
    assert outcomes["peer_quirk"] == 12 and "malformed" not in outcomes
    errors = {row["name"]: row["exchanges"] for row in r["errors"]}
    assert errors == {"UNSUPPORTED_VERSION": 13, "UNKNOWN_PRODUCER_ID": refused_requests}
    produce = next(row for row in r["per_api"] if row["api"] == "Produce")
    assert produce["error_names"] == f"UNKNOWN_PRODUCER_ID ×{refused_requests}"
    assert produce["not_fine"] == refused_requests
    assert expected.summary["not_fine"] == sum(n for o, n in outcomes.items() if o not in ("ok", "peer_quirk"))
    assert expected.summary["files"] == len(CAPTURES)
    sent = [r for records in produced for r in records]
    # records the broker refused were sent but never appended: counted apart, not as produced
    assert expected.summary["produced_records"] == sum(not r.get("error") for r in sent)
    assert expected.summary["refused_records"] == sum(bool(r.get("error")) for r in sent) == 24


def test_an_empty_capture_renders_without_tables_or_plots():
    results = {name: [] for name in QUERIES}
    results["summary"] = [
        {
            "files": 0,
            "connections": 0,
            "client_ids": 0,
            "exchanges": 0,
            "fine": 0,
            "not_fine": 0,
            "first_us": None,
            "last_us": None,
            "span_s": None,
            "request_bytes": None,
            "response_bytes": None,
            "produced_records": 0,
            "refused_records": 0,
            "fetched_records": 0,
            "produced_bytes": None,
            "fetched_bytes": None,
        }
    ]
    page = read_report(render_html(ReportData(params={"top": 10, "bucket_us": 1000}, results=results)))
    assert page.cards["exchanges"] == 0
    assert set(TABLES) <= page.empty_tables
    assert not page.marks


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")
def test_the_report_renders_in_headless_chromium(report_path, page, tmp_path):
    url = report_path.resolve().as_uri()
    dom = _chromium(tmp_path / "profile-dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = read_report(dom.stdout)
    assert {name: len(rows) for name, rows in rendered.tables.items()} == {
        name: len(rows) for name, rows in page.tables.items()
    }
    assert all(rendered.tables[name] for name in ("per_api", "per_client", "top_connections", "topics"))
    charts = {"timeline-rate", "timeline-latency", "timeline-records", "topic-bytes"}
    assert charts <= set(rendered.marks)
    assert rendered.element_counts["svg"] == len(rendered.marks) >= len(charts) + 10  # and a histogram per api
    assert rendered.marks == page.marks

    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "html_report.png"
    shot = _chromium(tmp_path / "profile-shot", f"--screenshot={screenshot}", "--window-size=1280,4000", url)
    assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
    shutil.copy(report_path, ARTIFACTS / "html_report.html")
    print(f"\nscreenshot: {screenshot}\nreport: {ARTIFACTS / 'html_report.html'}")

    image = pytest.importorskip("PIL.Image").open(screenshot).convert("RGB")
    colours = {rgb: n for n, rgb in image.getcolors(maxcolors=1 << 24)}
    drawn = {c: colours.get(tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)), 0) for c in PALETTE[:4]}
    assert all(n > 500 for n in drawn.values()), drawn  # each plot colour covers a visible area
