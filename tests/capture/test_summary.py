"""What a capture file's record headers say of it (``capture.summary``), for a file being written."""

from __future__ import annotations

import pytest

from kafka_protocol_source.capture import read_packets
from kafka_protocol_source.capture.summary import packets_through, summarize
from tests.samples.catalog import sample


@pytest.mark.parametrize("into_last", [0, 10, 16, 40])
def test_a_last_record_cut_short_counts_neither_as_a_packet_nor_for_the_time_so_far(tmp_path, into_last):
    """A file still being written ends inside a record. Its 16-byte header may be there already,
    with the packet's time: the file's end so far is still the last whole packet's (a stream that
    took it gave a request up too early, against a packet it had not read, and lost its answer)."""
    source = sample("mock_aiokafka_all_codecs").path
    data = source.read_bytes()
    whole = summarize(str(source))
    assert whole is not None and whole.complete
    times = [p.timestamp_ns for p in read_packets(str(source)) if hasattr(p, "timestamp_ns")]
    end_of_12 = _record_end(data, 12)
    path = tmp_path / "live.pcap"
    path.write_bytes(data[: end_of_12 + into_last])
    cut = summarize(str(path))
    assert cut is not None and cut.packets == 12 and cut.complete is (into_last == 0)
    assert cut.last_ns == max(times[:12]) and cut.first_ns == whole.first_ns


@pytest.mark.parametrize("into_last", [0, 10, 40])
def test_packets_through_a_time_are_the_whole_ones_captured_by_then(tmp_path, into_last):
    """How far a stream reads one file of several taken at once: the first whole packets whose
    times are all within the frontier. A record cut short is never one of them."""
    source = sample("mock_aiokafka_all_codecs").path
    data = source.read_bytes()
    times = [p.timestamp_ns for p in read_packets(str(source)) if hasattr(p, "timestamp_ns")]
    path = tmp_path / "live.pcap"
    path.write_bytes(data[: _record_end(data, 12) + into_last])
    assert packets_through(str(path), times[4]) == (5, max(times[:5]))
    assert packets_through(str(path), times[11]) == (12, max(times[:12]))
    assert packets_through(str(path), 1 << 62) == (12, max(times[:12]))
    assert packets_through(str(path), times[0] - 1) == (0, None)


def _record_end(data: bytes, records: int) -> int:
    """Where the first ``records`` records of a little-endian pcap end."""
    pos = 24
    for _ in range(records):
        pos += 16 + int.from_bytes(data[pos + 8 : pos + 12], "little")
    return pos
