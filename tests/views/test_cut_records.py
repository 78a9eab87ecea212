"""Records the capture cut off are a row of the records view that says so, never nothing.

``tcpdump -s 200`` keeps the start of each frame: a Produce request's or a Fetch response's
records are mostly past the cut. Before, the records view gave no row for them (0 rows where the
whole capture gives 60), and nothing said why; only FAILFAST and the exchanges view's ``gap`` rows
showed the cut (found by review, /tmp/rev12/REPORT.md). Now each frame cut before its records
ended gives, after the records it holds, one row at the partition the cut fell in, with
``error``, which PERMISSIVE keeps, DROPMALFORMED drops and FAILFAST fails on.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.framing.model import body_cut
from kafka_protocol_source.spec.api_keys import FETCH, PRODUCE
from kafka_protocol_source.views.records import by_read_mode, record_rows
from kafka_protocol_source.views.topic_names import TopicNames
from tests.cuts import Cut, resegmented, segments_of
from tests.samples.catalog import sample


def _rows(path, port) -> tuple[list, list[dict]]:
    exchanges = list(read_capture(path, ports=[port]))
    names = TopicNames()
    rows = []
    for ex in exchanges:
        names.learn(ex)
        rows += record_rows(ex, names)
    return exchanges, rows


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark tools) not installed")
def test_a_frame_the_snaplen_cut_gives_a_row_that_says_its_records_are_not_there(tmp_path):
    s = sample("tansu_confluent_kafka_all_codecs")
    cut = tmp_path / "s200.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", "200", str(s.path), str(cut)], check=True)
    exchanges, rows = _rows(cut, s.broker_port)
    cut_frames = [
        ex
        for ex in exchanges
        if (ex.api_key == PRODUCE and body_cut(ex, "request")) or (ex.api_key == FETCH and body_cut(ex, "response"))
    ]
    assert len(cut_frames) == 6  # 5 Produce requests and a Fetch response: every frame with records
    assert sorted((r["connection_id"], r["direction"]) for r in rows) == sorted(
        (ex.connection_id, "produce" if ex.api_key == PRODUCE else "fetch") for ex in cut_frames
    )
    for row in rows:
        assert row["error"].startswith("the capture cut this ") and "which may hold records" in row["error"]
        assert row["topic"] == "kw.confluent_kafka" and row["partition"] == 0
        assert row["key"] is row["value"] is row["offset"] is row["batch_offset"] is None
    _, whole = _rows(s.path, s.broker_port)
    assert len(whole) == 60 and all(r["error"] is None for r in whole)  # what the cut left out
    assert list(by_read_mode(iter(rows), "DROPMALFORMED")) == [r for r in rows if r["error"] is None]
    with pytest.raises(RuntimeError, match="the capture cut this"):
        list(by_read_mode(iter(rows), "FAILFAST"))


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark tools) not installed")
@pytest.mark.parametrize("snaplen", [80, 96, 128])
def test_every_frame_that_held_records_has_a_row_however_little_of_it_is_left(snaplen, tmp_path):
    """At -s 96 no body is left to decode (found by review: 5 of 6 such frames gave no row); a
    frame whose bytes cut off could not hold a record (an empty Fetch response missing 17 bytes)
    gives none."""
    s = sample("tansu_confluent_kafka_all_codecs")
    cut = tmp_path / f"s{snaplen}.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", str(snaplen), str(s.path), str(cut)], check=True)
    _, rows = _rows(cut, s.broker_port)
    _, whole = _rows(s.path, s.broker_port)
    held = {(r["connection_id"], r["direction"], r["request_time"]) for r in whole}
    said = {(r["connection_id"], r["direction"], r["request_time"]) for r in rows}
    assert held <= said
    assert all(r["error"] is not None for r in rows)
    if snaplen == 128:  # 62 bytes a packet: the empty Fetch responses (79 bytes) lose 17
        assert said == held
        # the body names the topic though the cut fell in its first partition's index: so does the
        # row (it had none in 4 of 5 Produce requests: found by review, /tmp/ux17/r09)
        assert {r["topic"] for r in rows if r["direction"] == "produce"} == {"kw.confluent_kafka"}


def test_a_produce_request_cut_inside_its_records_by_a_few_bytes_still_says_so(tmp_path):
    """A lost packet took a Produce request's last 24 bytes, inside its last record: fewer than a
    whole record, so no row said the capture cut it, and its six records were in no row at all,
    silently. A cut through a Produce request's records is a row however small it is."""
    s = sample("tansu_confluent_kafka_all_codecs")
    segments = resegmented(segments_of(s.path), 300)
    # the uncompressed Produce request (1,224 bytes): its last piece, 24 bytes, lost
    produce = [i for i, x in enumerate(segments) if x.packet_index == 54]
    path = Cut(tuple(x for i, x in enumerate(segments) if i != produce[-1])).write(tmp_path / "lost.pcap")
    exchanges, rows = _rows(path, s.broker_port)
    [cut] = [ex for ex in exchanges if ex.api_key == PRODUCE and body_cut(ex, "request")]
    assert "24 bytes missing" in cut.error
    [row] = [r for r in rows if r["request_time"] == cut.request_time]
    assert row["error"].startswith("the capture cut this request: its last 24 bytes")
