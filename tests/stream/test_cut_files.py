"""Files their writer left cut short, followed by the stream reader without Spark: a record cut
mid-way (tcpdump killed mid-write, or a buffer flushed in the middle of a record), a header cut
short. The stream gives what a batch read of the folder gives once the file is left: the cut
record, and the row that says the file was truncated; and the exchange once the rest comes."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter

import pytest

from kafka_protocol_source import read_capture
from tests.samples.catalog import sample

from .driving import drive, finish, ok_rows_once, stream_reader, watching
from .rotated_pieces import SAMPLES, exchange_key, rotated_pieces


def test_a_file_its_writer_left_cut_mid_record_gives_the_cut_record_and_says_so(tmp_path):
    """tcpdump was killed mid-write and started again: the file before ends in a record cut
    short. The stream waited for the rest of that record for good, so the row saying the file
    was truncated never came, and the part of the record that was captured was not read. Once
    a later file of the rotation is there, the stream gives what a batch read of the folder does."""
    name = SAMPLES[0]
    files, _ = rotated_pieces(tmp_path, name, "packets", 4)
    files[1].write_bytes(files[1].read_bytes()[:-10])
    port = sample(name).broker_port
    batch = Counter(exchange_key(e) for e in read_capture([str(f) for f in files], ports=[port]))
    reader, options, offset, rows = watching(tmp_path / "rotating", name)
    for f in files:
        shutil.copy(f, tmp_path / "rotating" / f.name)
        offset = drive(reader, options, offset, rows)
    finish(reader, options, offset, rows)
    assert Counter(exchange_key(r) for r in rows) == batch
    assert [r.error for r in rows if r.status == "capture_error"] == [
        e.error for e in read_capture([str(f) for f in files], ports=[port]) if e.status == "capture_error"
    ]


def _cut_capture(tmp_path, name, pieces):
    """The sample in rotated ``pieces``, the last cut 10 bytes short (tcpdump killed mid-write
    and not started again), and what a batch read of them gives: exchange keys, capture errors.
    Also the last piece's bytes before the cut."""
    files, _ = rotated_pieces(tmp_path, name, "packets", pieces)
    whole_last = files[-1].read_bytes()
    files[-1].write_bytes(whole_last[:-10])
    batch = list(read_capture([str(f) for f in files], ports=[sample(name).broker_port]))
    return files, Counter(map(exchange_key, batch)), [e.error for e in batch if e.status == "capture_error"], whole_last


@pytest.mark.parametrize("pieces", [1, 3])
def test_a_capture_that_ended_mid_record_gives_the_cut_record_once_its_file_is_left(tmp_path, pieces):
    """The newest file ends in a record cut short and nothing writes it any more. The stream
    waited for the rest of the record for good: the row saying the file was truncated never came,
    nor the captured part of the record. Once the folder is quiet, it gives what a batch read of
    the folder gives."""
    name = SAMPLES[0]
    files, batch, errors, _ = _cut_capture(tmp_path, name, pieces)
    reader, options, offset, rows = watching(tmp_path / "landing", name)
    for f in files:
        shutil.copy(f, tmp_path / "landing" / f.name)
        offset = drive(reader, options, offset, rows)
    finish(reader, options, offset, rows)
    assert Counter(map(exchange_key, rows)) == batch
    assert [r.error for r in rows if r.status == "capture_error"] == errors


@pytest.mark.parametrize("age_s", [0, 7200])
def test_available_now_reads_a_cut_record_of_a_file_left_alone_for_quiet_timeout(tmp_path, age_s):
    """availableNow over a folder whose capture ended mid-record gives what a batch read gives,
    once the file has not been written for ``quietTimeout``. A file written just now may be a
    tcpdump mid-write: its cut record waits for the next run, which reads it whole, once."""
    name = SAMPLES[0]
    files, batch, errors, whole_last = _cut_capture(tmp_path, name, 2)
    folder = tmp_path / "landing"
    folder.mkdir()
    for f in files:
        shutil.copy(f, folder / f.name)
        os.utime(folder / f.name, (time.time() - age_s, time.time() - age_s))

    def run(offset, rows):
        reader, options = stream_reader(folder, name, quietTimeout="600")
        reader.prepareForTriggerAvailableNow()
        return drive(reader, options, offset, rows)

    rows: list = []
    offset = run({"files": {}, "end_ns": 0}, rows)
    if age_s:
        assert Counter(map(exchange_key, rows)) == batch
        assert [r.error for r in rows if r.status == "capture_error"] == errors
        return
    assert not any(r.status == "capture_error" for r in rows)
    (folder / files[-1].name).write_bytes(whole_last)  # the writer wrote the rest of the record
    offset = run(offset, rows)
    reader, options = stream_reader(folder, name)
    finish(reader, options, offset, rows)
    whole = Counter(
        map(exchange_key, read_capture([str(folder / f.name) for f in files], ports=[sample(name).broker_port]))
    )
    assert ok_rows_once(rows, whole) and not any(r.status in ("capture_error", "gap") for r in rows)


def _record_ends(data: bytes) -> list[int]:
    """Where each record of a (microsecond or nanosecond, little-endian) pcap ends."""
    ends, pos = [], 24
    while pos + 16 <= len(data):
        pos += 16 + int.from_bytes(data[pos + 8 : pos + 12], "little")
        ends.append(pos)
    return ends


@pytest.mark.parametrize("record", [218, 274])
def test_a_cut_record_read_as_left_and_then_written_whole_gives_its_exchange(tmp_path, record):
    """tcpdump without ``-U`` flushed its buffer mid-record and then held a quiet link's packets
    longer than ``quietTimeout``: the stream read the cut record as left (a gap row, the
    truncated_file row). When the rest of the record came, it was counted as read, so its
    exchange was never given (found by review of fd8dd4c). Now it is, once."""
    name = SAMPLES[0]
    whole = sample(name).path.read_bytes()
    reader, options, offset, rows = watching(tmp_path / "landing", name)
    f = tmp_path / "landing" / "k-00.pcap"
    f.write_bytes(whole[: _record_ends(whole)[record] - 10])
    offset = drive(reader, options, offset, rows)
    reader.quiet_ns = 0
    offset = drive(reader, options, offset, rows)
    assert [r.status for r in rows].count("capture_error") == 1
    reader.quiet_ns = 3600 * 10**9
    f.write_bytes(whole)
    offset = drive(reader, options, offset, rows)
    finish(reader, options, offset, rows)
    assert ok_rows_once(rows, Counter(map(exchange_key, read_capture([str(f)], ports=[sample(name).broker_port]))))


def test_a_file_whose_header_its_writer_left_cut_short_is_a_row_once_the_folder_is_quiet(tmp_path):
    """tcpdump killed while writing a file's header, beside a whole capture: the batch read says
    the file header was cut short. The stream waited for the rest of the header for good (a
    capture of no packets yet), so that row never came (found by review of fd8dd4c)."""
    name = SAMPLES[0]
    whole = sample(name).path.read_bytes()
    reader, options, offset, rows = watching(tmp_path / "landing", name)
    (tmp_path / "landing" / "a.pcap").write_bytes(whole)
    (tmp_path / "landing" / "b.pcap").write_bytes(whole[:20])
    offset = drive(reader, options, offset, rows)
    assert not any(r.status == "capture_error" for r in rows)  # (still being written, maybe)
    finish(reader, options, offset, rows)
    files = [str(tmp_path / "landing" / n) for n in ("a.pcap", "b.pcap")]
    batch = list(read_capture(files, ports=[sample(name).broker_port]))
    assert [r.error for r in rows if r.status == "capture_error"] == [
        e.error for e in batch if e.status == "capture_error"
    ]
    assert ok_rows_once(rows, Counter(map(exchange_key, batch)))
