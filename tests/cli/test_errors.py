"""Failures as one line and an exit code, from the texts Spark gives (as PySpark 4.3 words them)."""

from __future__ import annotations

from kafka_protocol_source.cli.errors import FAILED, USAGE, Failure, UsageError, describe

OPTION_ERROR = """[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: \
Traceback (most recent call last):
  File "/x/kafka_protocol_source/spark/source.py", line 46, in schema
    return default_schema(ReadOptions.parse(self.options))
kafka_protocol_source.spark.options.OptionError: unknown option 'mdoe': did you mean 'mode'?
 SQLSTATE: 38000"""

FAILFAST = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/x/kafka_protocol_source/spark/partition_reader.py", line 78, in _rows
    raise RuntimeError(_failfast_message(ex))
RuntimeError: [MALFORMED_RECORD_IN_PARSING] kafka-wire (mode FAILFAST): a.pcap: packet 3: malformed: 5 bytes left"""


class FakeSparkError(Exception):
    def __init__(self, condition, text):
        super().__init__(text)
        self.condition = condition

    def getCondition(self):
        return self.condition


def test_a_bad_option_is_its_own_message():
    assert describe(FakeSparkError("PYTHON_DATA_SOURCE_ERROR", OPTION_ERROR)) == Failure(
        USAGE, "unknown option 'mdoe': did you mean 'mode'?"
    )


def test_failfast_is_the_reader_message():
    assert describe(FakeSparkError("PYTHON_EXCEPTION", FAILFAST)) == Failure(
        FAILED, "[MALFORMED_RECORD_IN_PARSING] kafka-wire (mode FAILFAST): a.pcap: packet 3: malformed: 5 bytes left"
    )


def test_usage_errors_and_unknown_failures():
    assert describe(UsageError("no capture files in x")) == Failure(USAGE, "no capture files in x")
    assert describe(FileNotFoundError("[PATH_NOT_FOUND] Path does not exist: x")).code == USAGE
    unknown = describe(ZeroDivisionError("division by zero\nmore"))
    assert unknown == Failure(FAILED, "ZeroDivisionError: division by zero", expected=False)
