"""The exchanges view's packet columns are the frame numbers Wireshark and tshark show.

A row that says something went wrong is found in Wireshark by ``frame.number == N``: each row's
``request_packet`` and ``response_packet`` are frames where tshark reads that row's correlation
id (found by review, /tmp/ux17: the view had no packet column, so a bad row was matched by
timestamp by hand)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.views.exchanges import exchange_row
from tests.samples.catalog import samples

CAPTURES = [s for s in samples() if s.path.suffix in (".pcap", ".pcapng")]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.path.name)
def test_packet_columns_are_the_frames_where_tshark_reads_the_correlation_id(s):
    fields = ["-T", "fields", "-e", "frame.number", "-e", "kafka.correlation_id"]
    command = ["tshark", "-r", str(s.path), "-d", f"tcp.port=={s.broker_port},kafka", "-Y", "kafka", *fields]
    seen: dict[int, set[int]] = {}
    for line in subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines():
        number, ids = line.split("\t")
        seen.setdefault(int(number), set()).update(int(i) for i in ids.split(",") if i)
    rows = [exchange_row(e) for e in read_capture(s.path, ports=[s.broker_port])]
    numbered = [(r[c], r["correlation_id"]) for r in rows for c in ("request_packet", "response_packet") if r[c]]
    assert len(numbered) > len(rows)  # both sides of most rows
    assert [(n, i) for n, i in numbered if i not in seen.get(n, ())] == []
    assert all(r["response_file"] is None for r in rows)  # one file: the response's is the same
