"""CaptureContext.time is total: any nanosecond count gives a datetime or None, never an exception."""

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from kafka_protocol_source.capture.model import LATEST_TIMESTAMP_NS
from kafka_protocol_source.framing.context import CaptureContext

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@given(st.integers(-(2**200), 2**200) | st.integers(-(2**64), 2**64))
def test_any_time_is_a_datetime_or_unknown(ns):
    time = CaptureContext.time(ns)
    assert time is None or isinstance(time, datetime)


@given(st.integers(1, LATEST_TIMESTAMP_NS - 1))
def test_times_the_capture_stage_gives_are_kept(ns):
    # Within a microsecond: the conversion goes through a float, whose step near 2200 is ~1 us.
    assert abs(CaptureContext.time(ns) - (EPOCH + timedelta(microseconds=ns // 1000))) <= timedelta(microseconds=1)


def test_no_time_is_unknown():
    assert CaptureContext.time(0) is None and CaptureContext.time(None) is None
