"""Bad options fail at load time with one message that says what to write instead."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

from .expected import TANSU_CONFLUENT

CASES = [
    ({"api": "Produc"}, r"unknown api 'Produc': did you mean 'Produce'"),
    ({"api": "Kafka"}, r"unknown api 'Kafka' \(names look like Produce"),
    ({"api": "999"}, r"unknown api key 999"),
    ({"api": "Produce", "apiVersion": "99"}, r"Produce has no version 99 \(versions 0-13\)"),
    ({"api": "Produce", "apiVersion": "ten"}, r"apiVersion must be an integer, not 'ten'"),
    ({"apiVersion": "3"}, r"apiVersion needs api"),
    ({"view": "packets"}, r"unknown view 'packets': use one of exchanges, records"),
    ({"view": "records", "api": "Produce"}, r"cannot be combined with view=records"),
    ({"view": "lag", "columnNameOfCorruptRecord": "bad"}, r"columnNameOfCorruptRecord adds .* view=lag has no such"),
    ({"mode": "LENIENT"}, r"unknown mode 'LENIENT': use one of PERMISSIVE, DROPMALFORMED, FAILFAST"),
    ({"ports": "9092,kafka"}, r"ports must be comma-separated integers, not '9092,kafka'"),
    ({"splitSize": "0"}, r"splitSize must be at least 1"),
    ({"detectKafka": "yes"}, r"detectKafka must be true or false"),
    ({"port": "9093"}, r"unknown option 'port': did you mean 'ports'\?"),
    ({"mdoe": "FAILFAST"}, r"unknown option 'mdoe': did you mean 'mode'\?"),
    ({"compression": "gzip"}, r"unknown option 'compression' \(known options: path, paths, view, api"),
    # values that could only give an empty or a wrong table (found by review, /tmp/ux17/r06)
    ({"apis": " , "}, r"apis names no api: write names or keys"),
    ({"apis": "Fetch", "api": "Produce"}, r"api 'Produce' is not among apis 'Fetch': no exchange could be read"),
    ({"apis": "Produce", "view": "connections"}, r"apis selects exchanges; view=connections summarises connections"),
    ({"ports": "9092,70000"}, r"ports must be TCP ports, 1 to 65535, not 70000"),
    ({"ports": "-1"}, r"ports must be TCP ports, 1 to 65535, not -1"),
    ({"ports": "", "detectKafka": "false"}, r"ports names no port and detectKafka is false"),
    ({"maxDecompressedBytes": "0"}, r"maxDecompressedBytes must be at least 1, not 0"),
    # streaming options: a batch read with them, and a stream's load(), fail as the others do
    ({"idleTimeout": "abc"}, r"idleTimeout must be a number of seconds, not 'abc'"),
    ({"quietTimeout": "-3"}, r"quietTimeout must not be negative, not '-3'"),
    ({"maxFilesPerTrigger": "zero"}, r"maxFilesPerTrigger must be an integer, not 'zero'"),
    ({"maxFilesPerTrigger": "0"}, r"maxFilesPerTrigger must be at least 1, not 0"),
    ({"maxBytesPerTrigger": "1.5"}, r"maxBytesPerTrigger must be an integer, not '1.5'"),
    ({"minFileAge": "x"}, r"minFileAge must be a number of seconds, not 'x'"),
    ({"idleTimeout": "inf"}, r"idleTimeout must be a number of seconds up to 3153600000, not 'inf'"),
    ({"quietTimeout": "nan"}, r"quietTimeout must be a number of seconds up to 3153600000, not 'nan'"),
    ({"stitchTolerance": "1e400"}, r"stitchTolerance must be a number of seconds up to"),
]


@pytest.mark.parametrize(("options", "message"), CASES, ids=[next(iter(o)) + "=" + o[next(iter(o))] for o, _ in CASES])
def test_bad_options_fail_with_a_clear_message(spark, options, message):
    with pytest.raises(AnalysisException, match=message) as info:
        spark.read.format("kafka-wire").options(**options).load(str(TANSU_CONFLUENT))
    assert "OptionError" in str(info.value)


@pytest.mark.parametrize(("options", "message"), CASES[-9:-3], ids=[next(iter(o)) for o, _ in CASES[-9:-3]])
def test_bad_streaming_options_fail_a_stream_at_load(spark, tmp_path, options, message):
    with pytest.raises(AnalysisException, match=message) as info:
        spark.readStream.format("kafka-wire").options(**options).load(str(tmp_path))
    assert "OptionError" in str(info.value)


def test_option_keys_are_case_insensitive_and_ports_are_taken(spark):
    df = (
        spark.read.format("kafka-wire")
        .option("API", "apiversions")
        .option("PORTS", "33325")
        .option("detectkafka", "false")
        .load(str(TANSU_CONFLUENT))
    )
    assert df.count() == 15
