"""Run the report's queries over the exchanges and records DataFrames; plain values come back.

Owns the order of work: the summary first (its time span picks the bucket width), then every other
query of ``queries.QUERIES`` with the same parameters, side by side (``side_by_side``). Does not
know how the report looks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from .queries import (
    QUERIED_EXCHANGE_COLUMNS,
    QUERIED_RECORD_COLUMNS,
    QUERIES,
    applications_records,
    bucket_width_us,
    run_query,
)

T = TypeVar("T")
R = TypeVar("R")

# A report's queries are small jobs over cached rows: each waits mostly on the driver (planning,
# code generation, scheduling), so a few at once keep the cores busy (the sample's HTML report: 8.3 s
# one after the other, 5.8 s four at a time).
QUERY_THREADS = 4


def side_by_side(run: Callable[[T], R], items: Iterable[T], threads: int = QUERY_THREADS) -> Iterator[R]:
    """``run(item)`` for every item, up to ``threads`` at once (one SparkSession runs the jobs of
    several threads together), given back in the items' order, each as soon as it and those before
    it are done. A failure is raised where its item comes; the queries not begun by then are not run."""
    pool = ThreadPoolExecutor(threads, thread_name_prefix="kafka-wire-query")
    try:
        futures = [pool.submit(run, item) for item in items]
        for future in futures:
            yield future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


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
    names = [name for name in QUERIES if name != "summary"]
    rows = side_by_side(lambda name: collect_rows(run_query(spark, name, exchanges, records, params)), names)
    return ReportData(params=params, results={"summary": summary, **dict(zip(names, rows, strict=True))})


def collect_rows(df) -> list[dict]:
    """A query's rows as dicts of JSON-ready values (the queries return only numbers, strings and nulls)."""
    rows = [row.asDict() for row in df.collect()]
    for row in rows:
        for key, value in row.items():
            if not (value is None or isinstance(value, (int, float, str))):
                raise TypeError(f"report query column {key} gave {type(value).__name__}: {value!r}")
    return rows
