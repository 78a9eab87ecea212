"""A growing capture file first read while tcpdump has written only its first packets (-U): the
stream gives what a batch read of the finished file gives, the rows decided by packets it had
not read yet included."""

from __future__ import annotations

from collections import Counter

import pytest

from kafka_protocol_source import read_capture
from tests.cuts import mid_segment, segments_of
from tests.samples.catalog import sample

from .driving import drive, finish, watching
from .rotated_pieces import SAMPLES, exchange_key


def _first_records(pcap: bytes, count: int) -> bytes:
    """The pcap's file header and its first ``count`` records: what tcpdump -U has written so far."""
    at = 24
    for _ in range(count):
        at += 16 + int.from_bytes(pcap[at + 8 : at + 12], "little")
    return pcap[:at]


@pytest.mark.parametrize("first_look", [1, 2, 3])
def test_a_capture_joined_mid_segment_first_seen_a_few_packets_long_keeps_its_gap_row(tmp_path, first_look):
    """A capture that starts 7 bytes into a request, its file first read while tcpdump had written
    only its first packets. Where those bytes end is decided by the frame start after them, which
    those packets did not hold yet; the gap row said it was decided by its own first packet,
    which the first micro-batch had read, so no micro-batch gave it (found by review: rev21 F3)."""
    name = SAMPLES[0]
    segments = segments_of(sample(name).path)
    whole = mid_segment(segments, len(segments) * 4 // 10, 7).write(tmp_path / "whole.pcap").read_bytes()
    batch = list(read_capture(str(tmp_path / "whole.pcap"), ports=[sample(name).broker_port]))
    assert any(e.status == "gap" and "joined this connection mid-stream" in e.error for e in batch)
    reader, options, offset, rows = watching(tmp_path / "live", name)
    live = tmp_path / "live" / "k.pcap"
    live.write_bytes(_first_records(whole, first_look))
    offset = drive(reader, options, offset, rows)
    live.write_bytes(whole)
    finish(reader, options, drive(reader, options, offset, rows), rows)
    assert Counter(map(_with_gaps, rows)) == Counter(map(_with_gaps, batch))


def _with_gaps(e) -> tuple:
    return *exchange_key(e), e.connection_id, e.error if e.status == "gap" else None
