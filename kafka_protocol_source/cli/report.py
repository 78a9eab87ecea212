"""``kafka-wire report``: a traffic summary of the captures, as plain-text tables.

An exchange counts as not ok as in the HTML report (``report.queries.NOT_FINE``): a transport
problem (its ``status``) or a response carrying an error code (``error_response``); a Produce
with acks=0 that has no answer (``no_response``) and SASL tokens went as the protocol says. The
not-ok table says who and when (clients, first and last time) and names each file that did not
read (``capture_error``), so that a folder of rotated files says which to look at. Records are the
applications' records: transaction markers (control records) and fetched records of aborted
transactions are left out of the counts, and produced records the broker refused are counted
apart (``refused``), not as produced.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import asdict

from ..report.compute import side_by_side
from ..report.queries import API_LABEL, APPLICATIONS_ONLY, NOT_FINE, PRODUCED, REFUSED, TOPIC_LABEL
from ..spec.error_codes import error_name
from .output import json_value, render_table
from .views import Summary

# every error name of a group's responses (null if none), so that one does not stand for several
_ERROR_NAMES = (
    "nullif(array_join(array_sort(array_distinct(flatten(collect_list(coalesce(error_names, array()))))), ', '), '')"
)

# How many of a group's exchanges were not ok, and every error name of its responses.
_NOT_OK_AND_ERRORS = f"count_if({NOT_FINE}) AS not_ok, {_ERROR_NAMES} AS error_names"

# Requests the broker answers only after waiting by design: their latency is mostly that wait.
WAITING_APIS = frozenset({"Fetch", "JoinGroup", "SyncGroup", "ShareFetch"})
WAITED = (
    "the broker holds these until data comes or a wait ends (fetch.max.wait.ms, the group's rebalance), "
    "so their latency, and a p99 over requests that include them, is mostly that wait"
)

# Who a group of not-ok exchanges came from: the first few client ids (addresses where a client
# sent none), and how many more. A capture error names its file instead: one row per bad file.
_CLIENTS = "array_sort(collect_set(coalesce(client_id, client_address)))"
_WHO = (
    f"nullif(concat_ws(', ', slice({_CLIENTS}, 1, 3), "
    f"CASE WHEN size({_CLIENTS}) > 3 THEN concat('+', size({_CLIENTS}) - 3, ' more') END), '')"
)

REPORT_QUERIES = {
    "Requests per API": """
        SELECT """
    + API_LABEL
    + """ AS api, count(*) AS requests,
               array_sort(collect_set(api_version)) AS versions,
               count(DISTINCT client_id) AS clients,
               round(percentile_approx(latency_ms, 0.5), 2) AS p50_ms,
               round(percentile_approx(latency_ms, 0.99), 2) AS p99_ms,
               count_if("""
    + NOT_FINE
    + """) AS not_ok,
               array_sort(array_distinct(flatten(collect_list(coalesce(error_codes, array()))))) AS error_codes
        FROM exchanges GROUP BY 1 ORDER BY requests DESC, api""",
    "Requests per client id": """
        SELECT coalesce(client_id, '(none)') AS client_id, count(*) AS requests,
               count(DISTINCT api_name) AS apis, count(DISTINCT connection_id) AS connections,
               round(percentile_approx(latency_ms, 0.99), 2) AS p99_ms, """
    + _NOT_OK_AND_ERRORS
    + """
        FROM exchanges GROUP BY 1 ORDER BY requests DESC, client_id""",
    "Requests per broker": """
        SELECT coalesce(broker_address, '(none)') AS broker, count(*) AS requests,
               count(DISTINCT connection_id) AS connections,
               count(DISTINCT coalesce(client_id, client_address)) AS clients,
               round(percentile_approx(latency_ms, 0.5), 2) AS p50_ms,
               round(percentile_approx(latency_ms, 0.99), 2) AS p99_ms, """
    + _NOT_OK_AND_ERRORS
    + """
        FROM exchanges GROUP BY 1 ORDER BY requests DESC, broker""",
    "Top topics by records": """
        SELECT """
    + TOPIC_LABEL
    + """ AS topic,
               sum(CASE WHEN """
    + PRODUCED
    + """ THEN 1 ELSE 0 END) AS produced,
               sum(CASE WHEN """
    + PRODUCED
    + """ THEN coalesce(length(key), 0) + coalesce(length(value), 0) END)
                   AS produced_bytes,
               sum(CASE WHEN """
    + REFUSED
    + """ THEN 1 ELSE 0 END) AS refused,
               sum(CASE WHEN direction = 'fetch' THEN 1 ELSE 0 END) AS fetched,
               sum(CASE WHEN direction = 'fetch' THEN coalesce(length(key), 0) + coalesce(length(value), 0) END)
                   AS fetched_bytes
        FROM records WHERE """
    + APPLICATIONS_ONLY
    + """ GROUP BY 1
        ORDER BY produced + refused + fetched DESC, topic LIMIT {top}""",
    "Exchanges that are not ok": """
        SELECT outcome, coalesce(api_name, '-') AS api, count(*) AS exchanges,
               date_format(min(coalesce(request_time, response_time)), 'yyyy-MM-dd HH:mm:ss') AS first,
               date_format(max(coalesce(response_time, request_time)), 'yyyy-MM-dd HH:mm:ss') AS last,
               CASE WHEN outcome = 'capture_error' THEN element_at(split(first(capture_file), '/'), -1) ELSE """
    + _WHO
    + """ END AS seen_in,
               CASE WHEN outcome = 'error_response' THEN """
    + _ERROR_NAMES
    + """ ELSE first(coalesce(error, array_join(error_names, ', ')), true) END AS example
        FROM exchanges WHERE """
    + NOT_FINE
    + """ GROUP BY outcome, api_name, CASE WHEN outcome = 'capture_error' THEN capture_file END
        ORDER BY exchanges DESC, outcome, api, seen_in""",
}


REPORT_FORMATS = ("table", "json")


def print_report(spark, summary: Summary, top: int, out, quiet=contextlib.nullcontext, fmt: str = "table") -> None:
    """The sections are queried side by side, and each printed inside ``quiet()`` once it and
    those before it are done; as JSON, one document once all are."""
    sections = side_by_side(lambda query: spark.sql(query.format(top=top)).collect(), REPORT_QUERIES.values())
    if fmt == "json":
        document: dict[str, object] = {"summary": summary_json(summary)}
        for title, rows in zip(REPORT_QUERIES, sections, strict=True):
            document[section_key(title)] = [_row_json(r.asDict()) for r in rows]
        with quiet():
            out.write(json.dumps(document, ensure_ascii=False, indent=1) + "\n")
            out.flush()
        return
    with quiet():
        out.write(f"\n{summary.describe()}\n\n")
        out.flush()
    for title, rows in zip(REPORT_QUERIES, sections, strict=True):
        waits = sorted(WAITING_APIS & {r.api for r in rows}) if title == "Requests per API" else []
        with quiet():
            out.write(f"== {title} ==\n")
            out.write((report_table([r.asDict() for r in rows]) if rows else "(none)") + "\n")
            if waits:
                out.write(f"({', '.join(waits)}: {WAITED}.)\n")
            out.write("\n")
            out.flush()


def section_key(title: str) -> str:
    """A section's name in the JSON report: "Requests per API" is ``requests_per_api``."""
    return re.sub(r"\W+", "_", title.strip().lower())


def summary_json(summary: Summary) -> dict:
    fields = {k: json_value(v) for k, v in asdict(summary).items()}
    return {**fields, "cut_or_unreadable": summary.cut_or_unreadable}


def _row_json(row: dict) -> dict:
    """As the table shows it, in JSON's types: error codes with their names."""
    codes = row.get("error_codes")
    if codes is not None:
        row = {**row, "error_codes": [{"code": c, "name": error_name(c)} for c in codes]}
    return {k: json_value(v) for k, v in row.items()}


def report_table(rows: list[dict]) -> str:
    def cell(key, value):
        if key == "error_codes" and value is not None:
            return ", ".join(f"{c} {error_name(c)}" for c in value) or "-"
        if isinstance(value, list):
            return ",".join(map(str, value)) or "-"
        return "-" if value is None else str(value)

    keys = list(rows[0])
    numeric = [all(isinstance(r[k], (int, float)) for r in rows if r[k] is not None) for k in keys]
    return render_table(keys, [[cell(k, r[k]) for k in keys] for r in rows], numeric)
