"""Files that overlap in time, read as one capture: one per interface, per direction, per host.

Each sample's traffic is split into files the way captures taken in several places at once split
it, and the files are read together (``read_capture`` of the list, as a Spark read of their
folder plans them). The rows must be those of Wireshark's ``mergecap`` merge of the same files
read as one file, and those of the whole traffic in one file: nothing counted twice, no side
lost, every payload byte accounted for.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest

from kafka_protocol_source import read_capture
from tests.accounting import check_accounting
from tests.cuts import Cut, by_direction, pieces, segments_of
from tests.samples.catalog import samples

CAPTURES = [s for s in samples() if s.path.suffix in (".pcap", ".pcapng")]


def _rows(paths, options) -> Counter:
    return Counter(
        (e.connection_id, e.api_key, e.api_version, e.correlation_id, e.status, e.request_span, e.response_span)
        for e in read_capture(paths, **options)
    )


def _per_interface(segments, tmp_path):
    return [Cut(segments).write(tmp_path / "eth0.pcap"), Cut(segments).write_cooked(tmp_path / "any.pcap")]


def _per_direction(segments, tmp_path, broker_port):
    to_broker, from_broker = by_direction(segments, broker_port)
    return [to_broker.write(tmp_path / "in.pcap"), from_broker.write(tmp_path / "out.pcap")]


def _per_host(segments, tmp_path, broker_port):
    """Connections split between two files by their client port, as two client hosts capture them."""
    client = [s.src_port if s.dst_port == broker_port else s.dst_port for s in segments]
    odd = tuple(s for s, port in zip(segments, client, strict=True) if port % 2)
    even = tuple(s for s, port in zip(segments, client, strict=True) if not port % 2)
    return [Cut(odd).write(tmp_path / "host1.pcap"), Cut(even).write(tmp_path / "host2.pcap")]


def _per_interface_rotated(segments, tmp_path):
    """Each interface's capture rotated into three pieces: six files, two at a time overlapping."""
    files = [p.write(tmp_path / f"eth0-{n}.pcap") for n, p in enumerate(pieces(segments, 3))]
    files += [p.write_cooked(tmp_path / f"any-{n}.pcap") for n, p in enumerate(pieces(segments, 3))]
    return sorted(files, key=lambda f: int(f.stem.rsplit("-", 1)[1]))  # in the order of their first packets


SPLITS = {
    "per_interface": lambda segments, tmp_path, port: _per_interface(segments, tmp_path),
    "per_direction": _per_direction,
    "per_host": _per_host,
    "per_interface_rotated": lambda segments, tmp_path, port: _per_interface_rotated(segments, tmp_path),
}


@pytest.mark.skipif(shutil.which("mergecap") is None, reason="mergecap (wireshark tools) not installed")
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_files_taken_at_once_in_several_places_read_as_their_merge_and_as_the_whole(s, split, tmp_path):
    segments = segments_of(s.path)
    options = {"ports": [s.broker_port]}
    whole = Cut(segments).write(tmp_path / "whole.pcap")
    files = SPLITS[split](segments, tmp_path, s.broker_port)
    merged = tmp_path / "merged.pcapng"
    subprocess.run(["mergecap", "-w", str(merged), *map(str, files)], check=True)
    together = _rows([str(f) for f in files], options)
    assert together == _rows(str(merged), options)
    assert together == _rows(str(whole), options)
    assert sum(n for key, n in together.items() if key[4] == "ok") > 10
    assert check_accounting(merged, **options) == []


def test_without_merging_each_file_of_one_direction_loses_the_other_side(tmp_path):
    """What the merge is for: read one after the other, the requests of one file never meet
    their responses in the other."""
    s = CAPTURES[0]
    files = _per_direction(segments_of(s.path), tmp_path, s.broker_port)
    options = {"ports": [s.broker_port]}
    apart = _rows(str(files[0]), options) + _rows(str(files[1]), options)
    assert not any(key[4] == "ok" for key in apart)
    assert any(key[4] == "ok" for key in _rows([str(f) for f in files], options))


def test_a_capture_of_the_client_side_only_says_the_broker_side_was_never_captured(tmp_path):
    """Every request of a capture taken one way is unanswered; each row says why, where it said
    only "no response before the end of the capture", as if the broker had not answered (found
    by review, /tmp/ux17/r07). A capture of both sides says nothing of the kind."""
    s = CAPTURES[0]
    to_broker, _ = _per_direction(segments_of(s.path), tmp_path, s.broker_port)
    rows = list(read_capture(str(to_broker), ports=[s.broker_port]))
    assert rows and {e.status for e in rows} == {"unanswered"}
    assert all("the capture holds no byte of the broker's side of this connection" in e.error for e in rows)
    whole = [e for e in read_capture(str(s.path), ports=[s.broker_port]) if e.error]
    assert not any("holds no byte of the broker's side" in e.error for e in whole)


def _misordered(segments, broker_port: int) -> list:
    """The segments cut to 40 bytes of payload each (a small MSS), with one of a request's
    pieces written after the broker's ACK of it, 20 us late (as multi-queue captures write)."""
    small = []
    for s in segments:
        if len(s.payload) <= 40:
            small.append(s)
            continue
        for k in range(0, len(s.payload), 40):
            small.append(
                s._replace(seq=(s.seq + k) & 0xFFFFFFFF, payload=s.payload[k : k + 40], timestamp_ns=s.timestamp_ns + k)
            )
    for i, s in enumerate(small):
        if s.dst_port == broker_port and len(s.payload) == 40 and small[i + 1].payload and small[i + 2].payload:
            if small[i + 1].dst_port == small[i + 2].dst_port == broker_port:
                break
    late = small[i + 1]
    end = (late.seq + len(late.payload)) & 0xFFFFFFFF
    acked = next(
        j
        for j in range(i + 2, len(small))
        if small[j].src_port == broker_port and ((small[j].ack - end) & 0xFFFFFFFF) < 0x80000000
    )
    moved = late._replace(timestamp_ns=small[acked].timestamp_ns + 20_000)
    out = small[: i + 1] + small[i + 2 : acked + 1] + [moved] + small[acked + 1 :]
    for n in range(1, len(out)):  # times that never go back
        if out[n].timestamp_ns <= out[n - 1].timestamp_ns:
            out[n] = out[n]._replace(timestamp_ns=out[n - 1].timestamp_ns + 1)
    return out


@pytest.mark.skipif(shutil.which("mergecap") is None, reason="mergecap (wireshark tools) not installed")
def test_a_segment_written_late_on_both_interfaces_is_waited_for_as_in_one_file(tmp_path):
    """TCP reassembly waits a number of packets for a segment a capture wrote late. Counted in
    packet indices, whose files' numbers interleave in a merged read, the wait ended at the
    other file's next packet: the request became a gap that either file alone reads whole."""
    s = next(c for c in CAPTURES if c.name == "mock_kafka_python_all_codecs")
    segments = _misordered(segments_of(s.path), s.broker_port)
    files = [Cut(tuple(segments)).write(tmp_path / "lo.pcap"), Cut(tuple(segments)).write_cooked(tmp_path / "any.pcap")]
    options = {"ports": [s.broker_port]}
    merged = tmp_path / "merged.pcapng"
    subprocess.run(["mergecap", "-w", str(merged), *map(str, files)], check=True)
    alone = _rows(str(files[0]), options)
    assert {key[4] for key in alone} == {"ok"}
    assert _rows([str(f) for f in files], options) == _rows(str(merged), options) == alone


@pytest.mark.parametrize("behind_ms", [0.05, 1, 100])
@pytest.mark.parametrize("s", CAPTURES[:4], ids=lambda s: s.name)
def test_one_file_per_direction_from_hosts_whose_clocks_disagree_still_pairs(s, behind_ms, tmp_path):
    """The broker's answers come from a host whose clock is behind the client's by more than the
    time to answer: each response is captured before its request. They came apart, each exchange
    a request_missing row and an unanswered one, saying the request was not captured. Now each
    pairs as in the whole capture; its latency, not known, is null, and its note says why."""
    segments = segments_of(s.path)
    to_broker, from_broker = by_direction(segments, s.broker_port)
    files = [
        to_broker.write(tmp_path / "in.pcap"),
        from_broker.write_cooked(tmp_path / "out.pcap", -int(behind_ms * 1e6)),
    ]
    whole = {(e.connection_id, e.request_span): e for e in read_capture(s.path, ports=[s.broker_port])}
    together = list(read_capture([str(f) for f in files], ports=[s.broker_port]))
    assert Counter(e.status for e in together) == Counter(e.status for e in whole.values())
    for e in together:
        before = whole[e.connection_id, e.request_span]
        assert (e.correlation_id, e.response_span, e.response) == (
            before.correlation_id,
            before.response_span,
            before.response,
        )
        if e.latency_ms is None and before.latency_ms is not None:
            assert "before its request: the capture's clocks or timestamps disagree" in e.note
        elif e.latency_ms is not None:
            assert e.latency_ms >= 0
    assert any(e.latency_ms is None for e in together) or behind_ms < 1


@pytest.mark.parametrize("in_time_order", [True, False])
@pytest.mark.parametrize("s", CAPTURES[:4], ids=lambda s: s.name)
def test_answers_stamped_before_their_requests_in_one_file_have_no_latency_filtered_or_not(s, in_time_order, tmp_path):
    """One file, the broker's side stamped 1 ms early (two clocks merged by time, or ``-i any``
    stamping out of order, the packets in the order they were sent). Answers that come after
    their request in the file had a negative latency in a read of every api and none in a read of
    a few (found by review of 85e14d3). Now every such row has none and says why, in both."""
    segments = segments_of(s.path)
    early = [
        x._replace(timestamp_ns=x.timestamp_ns - 1_000_000) if x.src_port == s.broker_port else x for x in segments
    ]
    if in_time_order:
        early.sort(key=lambda x: x.timestamp_ns)
    merged = Cut(tuple(early)).write(tmp_path / "m.pcap")
    rows = list(read_capture(merged, ports=[s.broker_port]))
    assert Counter(e.status for e in rows) == Counter(e.status for e in read_capture(s.path, ports=[s.broker_port]))
    assert all(e.latency_ms is None or e.latency_ms >= 0 for e in rows)
    unknown = {
        (e.connection_id, e.correlation_id, e.api_key) for e in rows if e.status == "ok" and e.latency_ms is None
    }
    assert unknown and all("before its request" in e.note for e in rows if e.status == "ok" and e.latency_ms is None)
    apis = sorted({key[2] for key in unknown})[:2]
    filtered = [e for e in read_capture(merged, ports=[s.broker_port], apis=apis) if e.status == "ok"]
    assert {(e.connection_id, e.correlation_id, e.api_key) for e in filtered if e.latency_ms is None} == {
        key for key in unknown if key[2] in apis
    }
