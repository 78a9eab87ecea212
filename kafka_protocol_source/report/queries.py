"""Every number of the HTML report, as Spark SQL over the exchanges and records views: one home.

Owns the query texts, their parameters and the choice of time bucket. Does not run anything:
``compute.py`` runs them (as ``run_query`` does for a test), ``html.py`` renders what they return.

Times are microseconds since the epoch (``*_us``), free of any session time zone. Each query
reads the DataFrames passed to ``spark.sql`` as ``{exchanges}``, ``{records}`` and
``{error_names}`` (the code -> name table of ``spec/error_codes.py``) and takes the named
parameters ``:top`` (row limit of the clients, connections and topics tables) and ``:bucket_us`` (time bucket width).
"""

from __future__ import annotations

from ..spec.error_codes import ERROR_NAMES

# An exchange is fine when it went as the protocol says: answered without an error code, or a request that
# expects no answer (Produce acks=0), or SASL tokens after SaslHandshake v0. The queries read the view's own
# ``outcome`` column (an answer carrying a non-zero error code is ``error_response``), so the SQL listed in
# the report runs as written over the exchanges view.
FINE_OUTCOMES = ("ok", "no_response", "sasl", "peer_quirk")
NOT_FINE = f"outcome NOT IN {tuple(FINE_OUTCOMES)!r}"  # (the terminal report's test too)
_NOT_FINE = f"CASE WHEN {NOT_FINE} THEN 1 ELSE 0 END"
_EVENT_TIME = "coalesce(request_time, response_time)"
_END_TIME = "coalesce(response_time, request_time)"
_PERCENTILES = "percentile_approx(latency_ms, array(0.5, 0.9, 0.99))"
_LATENCY_COLUMNS = "p[0] AS p50_ms, p[1] AS p90_ms, p[2] AS p99_ms, max_ms"
_RECORD_BYTES = "coalesce(octet_length(key), 0) + coalesce(octet_length(value), 0)"
# A record's topic by name, else by the id the capture never names (a capture joined after its clients
# learned their ids, with no metadata refresh in it), saying so.
TOPIC_LABEL = "coalesce(topic, concat('topic id ', topic_id), '(unknown)')"
# Produced records the broker did not refuse (accepted, or no answer captured); refused ones
# (UNKNOWN_PRODUCER_ID, say) were sent but never appended, and are counted apart.
# An exchange's api, or for a row without one (a response whose api is not told, a gap, a capture
# error) its status in brackets: the per-api tables add up to every row, as the summary counts them.
API_LABEL = "coalesce(api_name, concat('(', status, ')'))"
PRODUCED = "direction = 'produce' AND error_name IS NULL"
REFUSED = "direction = 'produce' AND error_name IS NOT NULL"
HISTOGRAM_FLOOR_MS = 2.0**-6  # latencies below ~16 µs share the first bin

# The columns of the two views that the queries read (a subset): callers may cache just these.
QUERIED_EXCHANGE_COLUMNS = (
    "capture_file",
    "connection_id",
    "client_address",
    "broker_address",
    "request_time",
    "response_time",
    "latency_ms",
    "api_name",
    "api_version",
    "client_id",
    "request_size",
    "response_size",
    "status",
    "error",
    "note",
    "error_codes",
    "outcome",
)
QUERIED_RECORD_COLUMNS = (
    "topic",
    "topic_id",
    "partition",
    "direction",
    "key",
    "value",
    "error_name",
    "request_time",
    "response_time",
)


def _error_names_by(key: str) -> str:
    """A subquery: per ``key`` of the exchanges, its error names with how many exchanges carried each."""
    return f"""
        SELECT key, concat_ws(', ', array_sort(collect_list(concat(name, ' ×', n)))) AS error_names
        FROM (SELECT e.key, coalesce(min(n.name), concat('UNKNOWN_', e.code)) AS name, count(*) AS n
              FROM (SELECT {key} AS key, explode(error_codes) AS code FROM {{exchanges}}) e
              LEFT JOIN {{error_names}} n ON n.code = e.code GROUP BY e.key, e.code)
        GROUP BY key"""


QUERIES: dict[str, str] = {
    "summary": f"""
        SELECT count(DISTINCT capture_file) AS files, count(DISTINCT connection_id) AS connections,
               count(DISTINCT client_id) AS client_ids, count(*) AS exchanges,
               count(*) - sum({_NOT_FINE}) AS fine, sum({_NOT_FINE}) AS not_fine,
               unix_micros(min({_EVENT_TIME})) AS first_us, unix_micros(max({_END_TIME})) AS last_us,
               (unix_micros(max({_END_TIME})) - unix_micros(min({_EVENT_TIME}))) / 1e6 AS span_s,
               sum(request_size) AS request_bytes, sum(response_size) AS response_bytes,
               (SELECT count_if({PRODUCED}) FROM {{records}}) AS produced_records,
               (SELECT count_if({REFUSED}) FROM {{records}}) AS refused_records,
               (SELECT count_if(direction = 'fetch') FROM {{records}}) AS fetched_records,
               (SELECT sum(CASE WHEN {PRODUCED} THEN {_RECORD_BYTES} END) FROM {{records}}) AS produced_bytes,
               (SELECT sum(CASE WHEN direction = 'fetch' THEN {_RECORD_BYTES} END) FROM {{records}}) AS fetched_bytes
        FROM {{exchanges}}""",
    "files": f"""
        SELECT capture_file, count(*) AS exchanges, count(DISTINCT connection_id) AS connections,
               unix_micros(min({_EVENT_TIME})) AS first_us, unix_micros(max({_END_TIME})) AS last_us
        FROM {{exchanges}} GROUP BY capture_file ORDER BY capture_file""",
    "outcomes": """
        SELECT outcome, count(*) AS exchanges, count(DISTINCT connection_id) AS connections,
               concat_ws(', ', array_sort(collect_set(api_name))) AS apis,
               min(error) AS example_error, min(note) AS example_note
        FROM {exchanges} GROUP BY 1 ORDER BY exchanges DESC, outcome""",
    "errors": """
        SELECT e.code, coalesce(min(n.name), concat('UNKNOWN_', e.code)) AS name, count(*) AS exchanges,
               concat_ws(', ', array_sort(collect_set(e.api_name))) AS apis,
               concat_ws(', ', array_sort(collect_set(coalesce(e.client_id, '(none)')))) AS client_ids
        FROM (SELECT api_name, client_id, explode(error_codes) AS code FROM {exchanges}) e
        LEFT JOIN {error_names} n ON n.code = e.code
        GROUP BY e.code ORDER BY exchanges DESC, e.code""",
    "per_api": f"""
        SELECT api, exchanges, versions, client_ids, not_fine, {_LATENCY_COLUMNS},
               coalesce(en.error_names, '') AS error_names FROM (
            SELECT {API_LABEL} AS api, count(*) AS exchanges,
                   concat_ws(',', transform(array_sort(collect_set(api_version)), v -> cast(v AS string)))
                       AS versions,
                   count(DISTINCT client_id) AS client_ids, sum({_NOT_FINE}) AS not_fine,
                   {_PERCENTILES} AS p, max(latency_ms) AS max_ms
            FROM {{exchanges}} GROUP BY 1) a
        LEFT JOIN ({_error_names_by(API_LABEL)}) en ON en.key = a.api
        ORDER BY exchanges DESC, api""",
    "per_client": f"""
        SELECT client_id, exchanges, connections, apis, not_fine, {_LATENCY_COLUMNS},
               coalesce(en.error_names, '') AS error_names FROM (
            SELECT coalesce(client_id, '(none)') AS client_id, count(*) AS exchanges,
                   count(DISTINCT connection_id) AS connections, count(DISTINCT api_name) AS apis,
                   sum({_NOT_FINE}) AS not_fine, {_PERCENTILES} AS p, max(latency_ms) AS max_ms
            FROM {{exchanges}} GROUP BY 1) c
        LEFT JOIN ({_error_names_by("coalesce(client_id, '(none)')")}) en ON en.key = c.client_id
        ORDER BY exchanges DESC, client_id LIMIT :top""",
    "top_connections": f"""
        SELECT connection_id, client_address, broker_address, client_ids, exchanges, request_bytes, response_bytes,
               first_us, last_us, not_fine, {_LATENCY_COLUMNS} FROM (
            SELECT connection_id, min(client_address) AS client_address, min(broker_address) AS broker_address,
                   concat_ws(', ', array_sort(collect_set(client_id))) AS client_ids, count(*) AS exchanges,
                   sum(request_size) AS request_bytes, sum(response_size) AS response_bytes,
                   unix_micros(min({_EVENT_TIME})) AS first_us, unix_micros(max({_END_TIME})) AS last_us,
                   sum({_NOT_FINE}) AS not_fine, {_PERCENTILES} AS p, max(latency_ms) AS max_ms
            FROM {{exchanges}} GROUP BY connection_id)
        ORDER BY exchanges DESC, connection_id LIMIT :top""",
    "topics": f"""
        SELECT {TOPIC_LABEL} AS topic, count(DISTINCT partition) AS partitions,
               count_if({PRODUCED}) AS produced_records,
               coalesce(sum(CASE WHEN {PRODUCED} THEN {_RECORD_BYTES} END), 0) AS produced_bytes,
               count_if({REFUSED}) AS refused_records,
               count_if(direction = 'fetch') AS fetched_records,
               coalesce(sum(CASE WHEN direction = 'fetch' THEN {_RECORD_BYTES} END), 0) AS fetched_bytes
        FROM {{records}} GROUP BY 1 ORDER BY produced_bytes + fetched_bytes DESC, topic LIMIT :top""",
    # log2 bins: bin k holds latencies in [2^k, 2^(k+1)) ms
    "latency_histogram": f"""
        SELECT api_name AS api, bin, pow(2, bin) AS from_ms, pow(2, bin + 1) AS to_ms, count(*) AS exchanges
        FROM (SELECT api_name, CAST(floor(log2(greatest(latency_ms, {HISTOGRAM_FLOOR_MS}))) AS INT) AS bin
              FROM {{exchanges}} WHERE api_name IS NOT NULL AND latency_ms IS NOT NULL)
        GROUP BY api_name, bin ORDER BY api, bin""",
    "timeline": f"""
        WITH ex AS (SELECT unix_micros({_EVENT_TIME}) div :bucket_us AS b, latency_ms, {_NOT_FINE} AS not_fine
                    FROM {{exchanges}} WHERE {_EVENT_TIME} IS NOT NULL),
             buckets AS (SELECT explode(sequence(min(b), max(b))) AS b FROM ex),
             agg AS (SELECT b, count(*) AS n, sum(not_fine) AS not_fine, {_PERCENTILES} AS p, max(latency_ms) AS max_ms
                     FROM ex GROUP BY b)
        SELECT b * :bucket_us AS bucket_start_us, coalesce(n, 0) AS exchanges,
               coalesce(n, 0) / (:bucket_us / 1e6) AS exchanges_per_s, coalesce(not_fine, 0) AS not_fine,
               coalesce(not_fine, 0) / (:bucket_us / 1e6) AS not_fine_per_s,
               {_LATENCY_COLUMNS}
        FROM buckets LEFT JOIN agg USING (b) ORDER BY b""",
    # the same buckets as the timeline (they span the exchanges), records placed by their exchange's time
    "record_timeline": f"""
        WITH ex AS (SELECT unix_micros({_EVENT_TIME}) div :bucket_us AS b FROM {{exchanges}}
                    WHERE {_EVENT_TIME} IS NOT NULL),
             buckets AS (SELECT explode(sequence(min(b), max(b))) AS b FROM ex),
             agg AS (SELECT unix_micros({_EVENT_TIME}) div :bucket_us AS b,
                            count_if({PRODUCED}) AS produced, count_if(direction = 'fetch') AS fetched
                     FROM {{records}} WHERE {_EVENT_TIME} IS NOT NULL GROUP BY 1)
        SELECT b * :bucket_us AS bucket_start_us,
               coalesce(produced, 0) AS produced, coalesce(produced, 0) / (:bucket_us / 1e6) AS produced_per_s,
               coalesce(fetched, 0) AS fetched, coalesce(fetched, 0) / (:bucket_us / 1e6) AS fetched_per_s
        FROM buckets LEFT JOIN agg USING (b) ORDER BY b""",
}


# Bucket widths a reader can take in at a glance, in microseconds
_NICE_BUCKETS_US = [w * 1000 for w in (1, 2, 5, 10, 20, 50, 100, 200, 500)] + [
    s * 1_000_000 for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
]
MAX_BUCKETS = 120


def bucket_width_us(span_s: float | None) -> int:
    """The narrowest nice bucket that covers ``span_s`` seconds in at most ``MAX_BUCKETS`` buckets."""
    span_us = (span_s or 0) * 1e6
    for width in _NICE_BUCKETS_US:
        if span_us / width < MAX_BUCKETS:
            return width
    return 86400 * 1_000_000 * (int(span_us // (86400e6 * MAX_BUCKETS)) + 1)


def error_names_frame(spark):
    """The ``{error_names}`` table (code, name) of ``spec/error_codes.py``, as literal rows: no Python worker."""
    rows = ", ".join(f"({code}, '{name}')" for code, name in sorted(ERROR_NAMES.items()))
    return spark.sql(f"SELECT * FROM VALUES {rows} AS error_names(code, name)")


# Records no application sees: transaction markers (control records), the fetched records of
# aborted transactions (a read_committed consumer drops them), and rows of records that could not
# be read (``error``: no record in them).
_UNSEEN = {
    "is_control": "NOT coalesce(is_control, false)",
    "is_aborted": "NOT coalesce(is_aborted, false)",
    "error": "error IS NULL",
}
APPLICATIONS_ONLY = " AND ".join(_UNSEEN.values())  # a SQL condition


def applications_records(records):
    """The records an application sees (of a records DataFrame, whichever of the columns it has)."""
    for column, seen in _UNSEEN.items():
        if column in records.columns:
            records = records.where(seen)
    return records


def run_query(spark, name: str, exchanges, records, params: dict):
    """``QUERIES[name]`` over the given DataFrames, with the parameters it uses out of ``params``;
    of the records, the applications' only (``applications_records``)."""
    records = applications_records(records)
    sql = QUERIES[name]
    args = {k: v for k, v in params.items() if f":{k}" in sql}
    return spark.sql(sql, args=args, exchanges=exchanges, records=records, error_names=error_names_frame(spark))
