"""Capture times beyond what a timestamp can sensibly be (before 1970, from 2200 on): the packet
is kept with its time unknown (0), and its interface gets one bad_timestamp issue."""

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol_source.capture import CaptureIssue, TcpSegment, read_packets
from kafka_protocol_source.capture.model import LATEST_TIMESTAMP_NS
from tests.capture import pcapbuild as b

T0 = 1_700_000_000_123_456_789


def frame(i: int) -> bytes:
    return b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(40000, 9092, 1000 + 10 * i, payload=bytes([i]) * 10)))


def read(data: bytes) -> list:
    return list(read_packets(io.BytesIO(data)))


def test_absurd_tsoffset_makes_times_unknown_with_one_issue_per_interface():
    interfaces = [(1, 9, 2**62, 0), (1, 9, None, 0)]
    packets = [("epb", i % 2, T0 + i, frame(i)) for i in range(6)]
    items = read(b.pcapng(interfaces, packets))
    assert [(type(x).__name__, x.packet_index) for x in items] == [
        ("CaptureIssue", 0),
        ("TcpSegment", 0),
        ("TcpSegment", 1),
        ("TcpSegment", 2),
        ("TcpSegment", 3),
        ("TcpSegment", 4),
        ("TcpSegment", 5),
    ]
    assert items[0].kind == "bad_timestamp" and "interface 0" in items[0].detail
    assert [s.timestamp_ns for s in items[1:]] == [0, T0 + 1, 0, T0 + 3, 0, T0 + 5]


def test_times_before_1970_are_unknown():
    items = read(b.pcapng([(1, 9, -2 * 10**9, 0)], [("epb", 0, T0, frame(0))]))
    assert [x.kind for x in items if isinstance(x, CaptureIssue)] == ["bad_timestamp"]
    assert [x.timestamp_ns for x in items if isinstance(x, TcpSegment)] == [0]


def test_tsresol_that_puts_times_past_2200_makes_them_unknown_in_every_packet_block():
    # Nanosecond ticks read as seconds (if_tsresol 0), in enhanced and obsolete packet blocks.
    items = read(b.pcapng([(1, 0, None, 0)], [("epb", 0, T0, frame(0)), ("pb", 0, T0, frame(1))]))
    assert [x.kind for x in items if isinstance(x, CaptureIssue)] == ["bad_timestamp"]
    assert [x.timestamp_ns for x in items if isinstance(x, TcpSegment)] == [0, 0]


def test_the_last_block_cut_short_gets_an_unknown_time_too():
    data = b.pcapng([(1, 9, 2**62, 0)], [("epb", 0, T0, frame(0))])
    items = read(data[:-6])
    assert [x.kind if isinstance(x, CaptureIssue) else x.timestamp_ns for x in items] == [
        "bad_timestamp",
        0,
        "truncated_file",
    ]


def scaled_ns(tsresol: int, tsoffset: int, ticks: int) -> int:
    """The pcapng spec's reading of a timestamp: ticks of 10^-n or 2^-n seconds, plus whole seconds."""
    per_second = 2 ** (tsresol & 0x7F) if tsresol & 0x80 else 10 ** (tsresol & 0x7F)
    return ticks * 10**9 // per_second + tsoffset * 10**9


@settings(max_examples=300, deadline=None)
@given(
    tsresol=st.integers(0, 255),
    tsoffset=st.integers(-(2**63), 2**63 - 1) | st.integers(-10, 10**10),
    ticks=st.integers(0, 2**64 - 1) | st.integers(0, 10**19),
)
def test_any_interface_scaling_gives_its_time_when_in_range_else_an_unknown_one(tsresol, tsoffset, ticks):
    items = read(b.pcapng([(1, tsresol, tsoffset, 0)], [("epb", 0, ticks, frame(0))]))
    (segment,) = [x for x in items if isinstance(x, TcpSegment)]
    ns = scaled_ns(tsresol, tsoffset, ticks)
    in_range = 0 <= ns < LATEST_TIMESTAMP_NS
    assert segment.timestamp_ns == (ns if in_range else 0)
    assert [x.kind for x in items if isinstance(x, CaptureIssue)] == ([] if in_range else ["bad_timestamp"])


def test_a_capture_with_an_absurd_tsoffset_reads_the_same_exchanges_with_unknown_times(tmp_path):
    from pathlib import Path

    from kafka_protocol_source.capture.pcapng import read_pcapng_frames
    from kafka_protocol_source.pipeline import read_capture

    sample = Path(__file__).resolve().parents[2] / "sample_captures" / "tansu_aiokafka_all_codecs.pcapng"
    data = sample.read_bytes()
    frames = [f for f in read_pcapng_frames(io.BytesIO(data[4:]).read, data[:4])]
    assert frames and all(type(f) is tuple for f in frames)
    path = tmp_path / "far_future.pcapng"
    path.write_bytes(b.pcapng([(1, 9, 2**40, 0)], [("epb", 0, ts, bytes(d), orig) for _, _, ts, _, d, orig in frames]))

    def key(e):
        return (e.connection_id, e.api_key, e.api_version, e.correlation_id, e.client_id, e.status)

    before, after = list(read_capture(sample)), list(read_capture(path))
    errors = [e for e in after if e.status == "capture_error"]
    assert len(errors) == 1 and "bad_timestamp at packet 1" in errors[0].error
    assert sorted(map(key, before)) == sorted(key(e) for e in after if e.status != "capture_error")
    assert {(e.request_time, e.response_time, e.latency_ms) for e in after} == {(None, None, None)}
