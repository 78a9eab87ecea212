"""When a frame the capture cut ended: latency for exchanges whose frames the snaplen cut.

Captures are often taken with a small snaplen (``tcpdump -s 128``: headers without payloads), so
every frame of more than a few bytes is cut. The packet that carried a frame's last byte is
still in the capture, with its time: the exchange's latency and response time are known, and
must be what the whole capture gives. Where that packet was lost, the end is not known and the
latency stays null rather than being made up from the packets that were there.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafka_protocol_source import read_capture
from tests.accounting import check_accounting
from tests.cuts import Cut, segments_of
from tests.samples.catalog import samples

CAPTURES = [s for s in samples() if s.path.suffix in (".pcap", ".pcapng")]


def _by_exchange(rows) -> dict:
    return {(e.connection_id, e.api_key, e.correlation_id): e for e in rows if e.api_key is not None}


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark tools) not installed")
@pytest.mark.parametrize("snaplen", [96, 200])
@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_exchanges_cut_by_the_snaplen_have_the_whole_captures_latency(s, snaplen, tmp_path):
    cut = tmp_path / f"s{snaplen}.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", str(snaplen), str(s.path), str(cut)], check=True)
    options = {"ports": [s.broker_port]}
    whole = _by_exchange(read_capture(s.path, **options))
    rows = list(read_capture(cut, **options))
    got = _by_exchange(rows)
    timed = {key: was for key, was in whole.items() if was.latency_ms is not None}
    if s.name.endswith("sll2") and snaplen == 96:  # a cooked header of 20 bytes leaves no Kafka header
        return
    assert any(e.status == "gap" and e.latency_ms is not None for e in rows), "the snaplen cuts some frames"
    assert sorted(timed) == sorted(key for key in timed if key in got)
    for key, was in timed.items():
        row = got[key]
        assert (row.request_time, row.response_time, row.latency_ms) == (
            was.request_time,
            was.response_time,
            was.latency_ms,
        ), row
    assert check_accounting(cut, **options) == []


def _split(segment, parts: int) -> list:
    """A segment as ``parts`` consecutive segments, 1 us apart."""
    size = -(-len(segment.payload) // parts)
    return [
        segment._replace(
            seq=(segment.seq + i) & 0xFFFFFFFF,
            payload=segment.payload[i : i + size],
            timestamp_ns=segment.timestamp_ns + 1000 * (i // size),
        )
        for i in range(0, len(segment.payload), size)
    ]


@pytest.mark.parametrize("lost", ["middle", "last"])
def test_a_frame_missing_a_packet_has_a_latency_only_if_its_last_packet_is_there(lost, tmp_path):
    s = next(c for c in CAPTURES if c.name == "tansu_confluent_kafka_all_codecs")
    segments = list(segments_of(s.path))
    whole = list(read_capture(s.path, ports=[s.broker_port]))
    victim = next(e for e in whole if e.api_name == "Fetch" and e.response_size > 2000)
    at = next(i for i, g in enumerate(segments) if g.packet_index == victim.response_packet)
    pieces = _split(segments[at], 3)
    del pieces[1 if lost == "middle" else 2]
    path = Cut(tuple(segments[:at] + pieces + segments[at + 1 :])).write(tmp_path / f"{lost}.pcap")
    row = next(
        e
        for e in read_capture(path, ports=[s.broker_port])
        if e.correlation_id == victim.correlation_id
        and e.connection_id == victim.connection_id
        and e.api_key == victim.api_key
    )
    assert row.status == "gap" and row.request_time == victim.request_time
    if lost == "middle":
        assert row.latency_ms == pytest.approx(victim.latency_ms + 0.002)  # its last piece, 2 us later
    else:
        assert row.latency_ms is None and row.response_time == victim.response_time  # (its start)


def _prefix_of(part, whole) -> bool:
    """Whether ``part`` holds only what ``whole`` holds, where ``whole`` has it: each value equal,
    each struct some of its fields, each array its first elements (the whole body also has what
    is decoded from bytes fields, which a cut body leaves undecoded)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _prefix_of(v, whole[k]) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(part) <= len(whole) and all(map(_prefix_of, part, whole))
    return part == whole


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark tools) not installed")
@pytest.mark.parametrize("snaplen", [96, 200])
@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_frames_the_snaplen_cut_hold_their_fields_up_to_the_cut(s, snaplen, tmp_path):
    """The bytes before a cut are the frame's own: its body read up to there holds the fields
    the whole capture's body has, equal, and nothing else (a Produce's topic and partition,
    the error codes of an answer cut after them)."""
    cut = tmp_path / f"s{snaplen}.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", str(snaplen), str(s.path), str(cut)], check=True)
    options = {"ports": [s.broker_port]}
    whole = _by_exchange(read_capture(s.path, **options))
    bodies = 0
    for key, row in _by_exchange(read_capture(cut, **options)).items():
        was = whole.get(key)
        if was is None or row.status != "gap":
            continue
        for part, full in ((row.request, was.request), (row.response, was.response)):
            if part is not None:
                assert _prefix_of(part, full), (key, part, full)
                bodies += bool(part)
        if row.request is not None and was.status == "ok":
            assert "holds its fields up to the cut" in row.error or row.request == was.request
    if snaplen == 200:
        assert bodies, "some cut frame is read up to its cut"
