"""Run the report's queries over the exchanges and records DataFrames; plain values come back.

Owns the order of work: the summary first (its time span picks the bucket width), then every other
query of ``queries.QUERIES`` with the same parameters. Does not know how the report looks.
"""

from __future__ import annotations

from dataclasses import dataclass

from .queries import (
    QUERIED_EXCHANGE_COLUMNS,
    QUERIED_RECORD_COLUMNS,
    QUERIES,
    applications_records,
    bucket_width_us,
    run_query,
)


@dataclass(frozen=True)
class ReportData:
    params: dict  # the named parameters every query ran with: top, bucket_us
    results: dict  # query name -> list of rows, each a dict of JSON-ready values

    @property
    def summary(self) -> dict:
        return self.results["summary"][0]


def compute_report(spark, exchanges, records, *, top: int = 10) -> ReportData:
    """Every query of the report over ``exchanges`` and ``records`` (the two views, as DataFrames).

    Each view is read once: the columns the queries use are checkpointed locally first. Not
    ``cache()``: ``spark.sql`` re-plans the DataFrames it is handed, and the plan of a Python data
    source scan is not matched to its cached copy (Spark 4.3: every query would read the captures again).
    """
    from pyspark import StorageLevel  # noqa: PLC0415 - rendering and the queries import without pyspark

    exchanges = exchanges.select(*QUERIED_EXCHANGE_COLUMNS).localCheckpoint(storageLevel=StorageLevel.MEMORY_AND_DISK)
    records = applications_records(records).select(*QUERIED_RECORD_COLUMNS)
    records = records.localCheckpoint(storageLevel=StorageLevel.MEMORY_AND_DISK)
    summary = collect_rows(run_query(spark, "summary", exchanges, records, {}))
    params = {"top": top, "bucket_us": bucket_width_us(summary[0]["span_s"])}
    results = {"summary": summary}
    for name in QUERIES:
        if name != "summary":
            results[name] = collect_rows(run_query(spark, name, exchanges, records, params))
    return ReportData(params=params, results=results)


def collect_rows(df) -> list[dict]:
    """A query's rows as dicts of JSON-ready values (the queries return only numbers, strings and nulls)."""
    rows = [row.asDict() for row in df.collect()]
    for row in rows:
        for key, value in row.items():
            if not (value is None or isinstance(value, (int, float, str))):
                raise TypeError(f"report query column {key} gave {type(value).__name__}: {value!r}")
    return rows
