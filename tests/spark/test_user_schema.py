"""A schema given with ``.schema(...)`` names the view's columns with their types: anything else
fails when the read is planned, naming the column (before, a misspelt column came back all null,
and a type the view does not give failed in pyarrow, naming nothing; found by review, /tmp/ux17/r02)."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql.types import StructType

from kafka_protocol_source.spark.options import OptionError, ReadOptions
from kafka_protocol_source.spark.source import readable_schema
from kafka_protocol_source.spark.user_schema import check_user_schema

from .expected import TANSU_CONFLUENT, exchanges


def check(ddl: str, **options) -> None:  # (fromDDL parses in the JVM: the tests take the session)
    read = ReadOptions.parse({"path": "x", **options})
    check_user_schema(StructType.fromDDL(ddl), readable_schema(read), read.view)


@pytest.mark.parametrize(
    ("ddl", "options", "message"),
    [
        (
            "api_name string, latncy_ms double",
            {},
            r"the exchanges view has no column 'latncy_ms' \(did you mean 'latency_ms'",
        ),
        ("API_NAME string", {}, r"no column 'API_NAME' \(did you mean 'api_name'\? names are matched exactly\)"),
        ("latency_ms int", {}, r"latency_ms is double, not int"),
        ("correlation_id smallint", {}, r"correlation_id is int, not smallint"),  # narrower: values would not fit
        ("api_key string", {}, r"api_key is smallint, not string"),
        ("request string", {}, r"request is variant, not string"),
        ("_corrupt_record string", {}, r"_corrupt_record is binary, not string"),
        ("value string", {"view": "records"}, r"value is binary, not string"),
        ("headers array<struct<key:string,value:string>>", {"view": "records"}, r"headers\[\]\.value is binary"),
        ("request struct<acks:string>", {"api": "Produce"}, r"request\.acks is smallint, not string"),
        ("request struct<akcs:smallint>", {"api": "Produce"}, r"request has no field 'akcs' \(did you mean 'acks'"),
    ],
)
def test_a_column_the_view_does_not_give_is_named(spark, ddl, options, message):
    with pytest.raises(OptionError, match=message):
        check(ddl, **options)


@pytest.mark.parametrize(
    ("ddl", "options"),
    [
        ("api_name string, latency_ms double, outcome string", {}),  # the README's slim schema
        ("api_name string, topic_names map<string,string>, _corrupt_record binary", {}),  # asked for by naming them
        ("request struct<acks:smallint,topic_data:array<struct<name:string>>>", {"api": "Produce"}),  # fields left out
        ("topic string, value binary, headers array<struct<key:string>>", {"view": "records"}),
        # types the values widen to, which read before the check (found by review, /tmp/rev17)
        ("api_key int, correlation_id bigint, request_size bigint, latency_ms float, error_codes array<int>", {}),
        ("request_time timestamp_ntz, response_time timestamp_ntz", {}),  # spark.sql.timestampType=TIMESTAMP_NTZ
        ("partition bigint, offset double", {"view": "records"}),
        ("request struct<acks:int>", {"api": "Produce"}),
    ],
)
def test_columns_and_fields_of_the_view_may_be_left_out(spark, ddl, options):
    check(ddl, **options)


def test_spark_says_so_when_the_read_is_planned(spark):
    with pytest.raises(AnalysisException, match=r"no column 'latncy_ms' \(did you mean 'latency_ms'"):
        spark.read.format("kafka-wire").schema("api_name string, latncy_ms double").load(str(TANSU_CONFLUENT)).collect()
    rows = spark.read.format("kafka-wire").schema("api_name string, latency_ms double").load(str(TANSU_CONFLUENT))
    assert sorted(r.api_name for r in rows.collect()) == sorted(e.api_name for e in exchanges(TANSU_CONFLUENT))
