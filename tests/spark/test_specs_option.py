"""The ``specs`` option takes a krammar file as well as a JSON directory.

Reading with the bundled krammar rendering gives the same DataFrames as the default JSON specs,
in the VARIANT exchanges view and in a typed view; a krammar file with an error fails at load
time, naming its line and column.
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.errors import AnalysisException

from kafka_protocol_source.spec.registry import DEFAULT_SPECS

from .expected import MOCK_AIOKAFKA, TANSU_CONFLUENT

KRAMMAR = str(DEFAULT_SPECS / "kafka.krammar")
# VARIANT columns cannot be compared or sorted: compare their JSON text
COLUMNS = (
    "connection_id",
    "api_name",
    "api_version",
    "correlation_id",
    "status",
    "error",
    "to_json(request) AS request",
    "to_json(response) AS response",
)


def read(spark, path, **options):
    return spark.read.format("kafka-wire").options(**options).load(str(path))


@pytest.mark.parametrize("path", [TANSU_CONFLUENT, MOCK_AIOKAFKA], ids=lambda p: p.stem)
def test_exchanges_read_with_krammar_equal_those_read_with_json(spark, path):
    expected = read(spark, path).selectExpr(*COLUMNS)
    actual = read(spark, path, specs=KRAMMAR).selectExpr(*COLUMNS)
    assert expected.count() > 0
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_a_typed_view_read_with_krammar_equals_the_json_one(spark):
    expected = read(spark, TANSU_CONFLUENT, api="Fetch")
    actual = read(spark, TANSU_CONFLUENT, api="Fetch", specs=KRAMMAR)
    assert actual.schema == expected.schema
    assert expected.count() > 0
    assert_df_equality(actual, expected)  # one capture is read in its own order; MAP columns cannot be sorted


def test_a_broken_krammar_file_fails_at_load_naming_line_and_column(spark, tmp_path):
    broken = tmp_path / "broken.krammar"
    broken.write_text("RequestHeader => not top level, header, max version 2\n  ApiKey: int16\n   Version: int16\n")
    with pytest.raises(AnalysisException, match=r"specs: .*broken.krammar:3:4: indented 3 spaces"):
        read(spark, TANSU_CONFLUENT, specs=str(broken))


def test_a_krammar_file_without_headers_is_refused(spark, tmp_path):
    only_api = tmp_path / "api.krammar"
    only_api.write_text(
        "ApiVersionsRequest => key 18, max version 0\n  X: int8\n\nApiVersionsResponse =>\n  ErrorCode: int16\n"
    )
    with pytest.raises(AnalysisException, match=r"does not define RequestHeader or ResponseHeader"):
        read(spark, TANSU_CONFLUENT, specs=str(only_api))


PARTIAL = ("FindCoordinatorRequest", "FindCoordinatorResponse", "RequestHeader", "ResponseHeader")


@pytest.fixture(scope="module")
def find_coordinator_only(tmp_path_factory) -> str:
    import shutil

    folder = tmp_path_factory.mktemp("partial")
    for name in PARTIAL:
        shutil.copy(DEFAULT_SPECS / f"{name}.json", folder / f"{name}.json")
    return str(folder)


def test_partial_definitions_pair_every_exchange_and_type_only_what_they_define(spark, find_coordinator_only):
    pairing = (
        "connection_id",
        "correlation_id",
        "api_key",
        "api_version",
        "client_id",
        "request_size",
        "response_size",
        "latency_ms",
    )
    full = read(spark, TANSU_CONFLUENT)
    partial = read(spark, TANSU_CONFLUENT, specs=find_coordinator_only)
    assert_df_equality(partial.select(*pairing), full.select(*pairing), ignore_row_order=True)
    statuses = {r.status: r.n for r in partial.groupBy("status").agg({"*": "count"}).toDF("status", "n").collect()}
    assert statuses["unknown_api"] > 0 and statuses["ok"] == full.where("api_name = 'FindCoordinator'").count()

    # An api the file lacks: typed rows without typed fields, each saying why; no failure.
    produce = read(spark, TANSU_CONFLUENT, specs=find_coordinator_only, api="Produce").collect()
    assert produce and {r.status for r in produce} == {"unknown_api"}
    assert all("Produce" in r.error and find_coordinator_only in r.error for r in produce)
    coordinator = read(spark, TANSU_CONFLUENT, specs=find_coordinator_only, api="FindCoordinator").collect()
    assert coordinator and all(r.status == "ok" and r.request is not None for r in coordinator)
    # Records are read from Produce and Fetch bodies: none here, and the read still works.
    assert read(spark, TANSU_CONFLUENT, specs=find_coordinator_only, view="records").count() == 0
