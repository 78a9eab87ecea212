"""The stream reader driven without Spark, micro-batch by micro-batch: its offsets, what each
micro-batch reads and emits, and when the folder counts as quiet, as files land, grow, wait or
are copied in the way rotating captures do."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark.emit_rule import ANSWERED_LATE, GIVEN_UP_QUIET
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.spark.stream import QUIET, KafkaWireStreamReader
from tests.samples.catalog import sample

from .driving import drive, finish, ok_rows_once, stream_reader, watching
from .rotated_pieces import SAMPLES, exchange_key, rotated_pieces


def test_an_answer_after_the_folder_went_quiet_comes_as_the_exchange_again(tmp_path):
    """Files land one by one and the folder goes quiet after each (a capture rotated slower than
    ``quietTimeout``): every request still open is given up as unanswered then. An answer in a
    later file comes as the exchange again, saying so, as after an idle timeout; it used to be
    dropped, so the JoinGroup that waited out a rebalance was never seen answered."""
    name = SAMPLES[0]
    files, _ = rotated_pieces(tmp_path, name, "time", 6)
    folder = tmp_path / "landing"
    folder.mkdir()
    raw = {"path": str(folder), "ports": str(sample(name).broker_port)}
    options = ReadOptions.parse(raw)
    reader = KafkaWireStreamReader(options, default_schema(options))
    reader.quiet_ns = 0  # quiet as soon as nothing new has landed
    offset, rows = reader.initialOffset(), []
    for f in files:
        shutil.copy(f, folder / f.name)
        while (end := reader.latestOffset(offset, ReadMaxFiles(1))) != offset:
            rows += [
                ex for p in reader.partitions(offset, end) for ex in PartitionReader(options, reader.schema)._rows(p)
            ]
            offset = end
    answered = Counter((r.client_address, r.correlation_id) for r in rows if r.status == "ok")
    whole = [e for e in read_capture(sample(name).path, ports=[sample(name).broker_port]) if e.status == "ok"]
    assert answered == Counter((e.client_address, e.correlation_id) for e in whole)
    late = [r for r in rows if r.note and ANSWERED_LATE in r.note]
    assert "JoinGroup" in {r.api_name for r in late}
    given_up = {(r.client_address, r.correlation_id) for r in rows if r.status == "unanswered"}
    assert {(r.client_address, r.correlation_id) for r in late} <= given_up
    # the capture did not end there: the row says what gave it up
    assert all(r.error.startswith(GIVEN_UP_QUIET) for r in rows if r.status == "unanswered")


def test_a_micro_batch_longer_than_quiet_timeout_does_not_make_the_folder_quiet(tmp_path, monkeypatch):
    """The streaming notebook's first micro-batch took 11 s with quietTimeout=5: the next look
    found the folder quiet, and gave up the Fetch and JoinGroup in flight, whose answers came in
    the next file (71 requests counted for 69). Quiet time is counted from the first look that
    found nothing new."""
    name = SAMPLES[0]
    files, _ = rotated_pieces(tmp_path, name, "time", 6)
    folder = tmp_path / "landing"
    folder.mkdir()
    reader, _ = stream_reader(folder, name, quietTimeout="5")
    shutil.copy(files[0], folder / files[0].name)
    clock = [time.time_ns()]
    monkeypatch.setattr(time, "time_ns", lambda: clock[0])
    start = reader.initialOffset()
    offset = reader.latestOffset(start, ReadAllAvailable())
    assert offset != start
    clock[0] += 11 * 10**9  # the micro-batch that read it
    assert reader.latestOffset(offset, ReadAllAvailable()) == offset  # busy reading, not watching the folder
    clock[0] += 4 * 10**9
    assert reader.latestOffset(offset, ReadAllAvailable()) == offset
    clock[0] += 1 * 10**9
    assert reader.latestOffset(offset, ReadAllAvailable())["end_ns"] == QUIET  # 5 s seen quiet


def test_a_file_that_grows_again_after_it_was_read_is_read_on_not_again_with_min_file_age(tmp_path):
    """With minFileAge, tcpdump's live file is too young again each time it grows: it used to
    drop out of the offset then, and come back as a new file read from its first packet, so
    everything already emitted from it came out twice."""
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "packets", 2)
    folder = tmp_path / "in"
    folder.mkdir()
    live = folder / "live.pcap"
    live.write_bytes(files[0].read_bytes())
    os.utime(live, (time.time() - 10, time.time() - 10))
    reader, options = stream_reader(folder, name, minFileAge="5", quietTimeout="3600")
    rows: list = []
    offset = drive(reader, options, reader.initialOffset(), rows)
    first = len(rows)
    with open(live, "ab") as f:
        f.write(files[1].read_bytes()[24:])  # it grows: too young for minFileAge again
    offset = drive(reader, options, offset, rows)
    assert len(rows) == first and str(live) in offset["files"]  # waits, and keeps what was read of it
    os.utime(live, (time.time() - 10, time.time() - 10))
    reader.quiet_ns = 0  # the end: what is still open is given up
    drive(reader, options, offset, rows)
    assert Counter(exchange_key(r) for r in rows if r.status != "unanswered") == whole


def test_a_rotated_file_still_empty_or_half_a_header_is_waited_for_not_a_capture_error(tmp_path):
    """tcpdump's next file stays empty until its first write, and may show part of its header:
    not a capture yet, not a broken one (it was a capture_error row for good, and with FAILFAST
    the query's end)."""
    name = SAMPLES[1]
    files, whole = rotated_pieces(tmp_path, name, "packets", 2)
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(files[0], folder / "k-00.pcap")
    nxt = folder / "k-01.pcap"
    nxt.write_bytes(b"")
    reader, options = stream_reader(folder, name, quietTimeout="3600", mode="FAILFAST")
    rows: list = []
    offset = drive(reader, options, reader.initialOffset(), rows)
    assert str(nxt) not in offset["files"]
    nxt.write_bytes(files[1].read_bytes()[:10])  # half the pcap header
    offset = drive(reader, options, offset, rows)
    assert str(nxt) not in offset["files"]
    nxt.write_bytes(files[1].read_bytes())
    reader.quiet_ns = 0
    drive(reader, options, offset, rows)
    assert not [r for r in rows if r.status == "capture_error"]
    assert Counter(exchange_key(r) for r in rows if r.status != "unanswered") == whole


def test_files_copied_in_with_old_modification_times_do_not_make_the_folder_quiet(tmp_path):
    """Quiet is no new packet for quietTimeout as the stream sees the folder. Files copied in with
    ``cp -p`` or ``rsync -a`` carry old modification times: the folder counted as quiet at every
    trigger with nothing new, so requests open across two files were given up as unanswered,
    then came again answered late: twice each."""
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 5)
    folder = tmp_path / "in"
    folder.mkdir()
    reader, options = stream_reader(folder, name, quietTimeout="30")
    offset, rows = reader.initialOffset(), []
    for f in files:
        target = shutil.copy(f, folder / f.name)
        os.utime(target, (time.time() - 3600, time.time() - 3600))
        offset = drive(reader, options, offset, rows)
        offset = drive(reader, options, offset, rows)  # a trigger with nothing new: not quiet yet
    reader.quiet_ns = 0
    drive(reader, options, offset, rows)
    assert not [r for r in rows if r.note and ANSWERED_LATE in r.note]
    assert Counter(exchange_key(r) for r in rows if r.status != "unanswered") == whole


def _compressed_as_tcpdump_z_does(path, partial: bool = False):
    """``tcpdump -z gzip``: the closed file's .gz is written beside it, then the file removed
    (``partial``: the .gz is half written, the file still there)."""
    import gzip

    data = gzip.compress(path.read_bytes())
    target = path.with_name(path.name + ".gz")
    target.write_bytes(data[: len(data) // 2] if partial else data)
    if not partial:
        path.unlink()
    return target


def test_files_compressed_or_renamed_after_they_were_read_are_not_read_again(tmp_path):
    """A rotated file that tcpdump -z gzip compresses, or one moved aside, is the same file under
    another name: it used to be read again from its first packet, and every exchange it held
    came out twice. Its half-written .gz waits; a file whose bytes were never read still is."""
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 4)
    folder = tmp_path / "rotating"
    reader, options, offset, rows = watching(folder, name)
    landed = []
    for n, f in enumerate(files):
        landed.append(shutil.copy(f, folder / f.name))
        offset = drive(reader, options, offset, rows)
        if n == 1:
            _compressed_as_tcpdump_z_does(folder / files[0].name, partial=True)
            offset = drive(reader, options, offset, rows)
            (folder / (files[0].name + ".gz")).unlink()
            _compressed_as_tcpdump_z_does(folder / files[0].name)
            offset = drive(reader, options, offset, rows)
        if n == 2:
            os.rename(folder / files[1].name, folder / ("kept-" + files[1].name))
            offset = drive(reader, options, offset, rows)
    ok = Counter({key: n for key, n in whole.items() if key[-1] == "ok"})
    assert Counter(exchange_key(r) for r in rows if r.status == "ok") == ok
    assert sorted(p for p in offset["files"] if "copy_of" in offset["files"][p]) == sorted(
        [str(folder / (files[0].name + ".gz")), str(folder / ("kept-" + files[1].name))]
    )


def test_logrotate_numbered_rotation_reads_each_file_once(tmp_path):
    """k.pcap.N -> k.pcap.N+1, k.pcap -> k.pcap.1, a new k.pcap: every rotated file lands on a
    name the offset holds for another file (it was read again), and the old name holds a new
    file (the copy waited for it forever)."""
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 4)
    folder = tmp_path / "logs"
    reader, options, offset, rows = watching(folder, name)
    for i, f in enumerate(files):
        if i:
            for n in range(i - 1, 0, -1):
                os.rename(folder / f"k.pcap.{n}", folder / f"k.pcap.{n + 1}")
            os.rename(folder / "k.pcap", folder / "k.pcap.1")
        shutil.copy(f, folder / "k.pcap")
        offset = drive(reader, options, offset, rows)
    finish(reader, options, offset, rows)
    assert ok_rows_once(rows, whole)


def test_a_file_gzipped_after_its_micro_batch_was_planned_is_read_where_it_went(tmp_path):
    """tcpdump -z gzip compresses a file right when it closes, which is when the stream plans
    reading its last packets; a restart from a checkpoint plans that micro-batch again. Its
    packets were lost (a capture_error row at best)."""
    import gzip

    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 3)
    for when in ("before_partitions", "before_read"):
        folder = tmp_path / when
        reader, options, offset, rows = watching(folder, name)
        for f in files:
            path = shutil.copy(f, folder / f.name)
            end = reader.latestOffset(offset, ReadMaxFiles(1))
            if when == "before_partitions":
                (folder / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
                os.unlink(path)
            parts = reader.partitions(offset, end)
            if when == "before_read":
                (folder / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
                os.unlink(path)
            rows += [ex for p in parts for ex in PartitionReader(options, reader.schema)._rows(p)]
            offset = drive(reader, options, end, rows)
        finish(reader, options, offset, rows)
        assert not [r for r in rows if r.status == "capture_error"], when
        assert ok_rows_once(rows, whole), when


def test_a_file_and_its_gz_side_by_side_are_read_once(tmp_path):
    """A stream that starts (or resumes) while gzip has written the .gz and not yet removed
    the file: both were new, and both were read."""
    import gzip

    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 3)
    folder = tmp_path / "in"
    folder.mkdir()
    for f in files:
        shutil.copy(f, folder / f.name)
    (folder / (files[0].name + ".gz")).write_bytes(gzip.compress(files[0].read_bytes()))
    reader, options = stream_reader(folder, name, quietTimeout="3600")
    offset, rows = reader.initialOffset(), []
    end = reader.latestOffset(offset, ReadAllAvailable())  # (the default limit: every file at once)
    rows += [ex for p in reader.partitions(offset, end) for ex in PartitionReader(options, reader.schema)._rows(p)]
    offset = drive(reader, options, end, rows)
    os.unlink(folder / files[0].name)  # gzip is done
    finish(reader, options, offset, rows)
    assert ok_rows_once(rows, whole)


def test_two_files_that_begin_with_the_same_packet_are_two_files(tmp_path):
    """The same first packet on two interfaces written to two files, then different traffic:
    the second is no copy of the first, whether it lands with it or later."""
    from tests.cuts import Cut, segments_of

    name = SAMPLES[0]
    segments = segments_of(sample(name).path)
    first = Cut(segments[: len(segments) // 2]).write(tmp_path / "eth0.pcap")
    second = Cut(segments[:1] + segments[len(segments) // 2 :]).write(tmp_path / "eth1.pcap")
    want = Counter(
        exchange_key(e)
        for f in (first, second)
        for e in read_capture(f, ports=[sample(name).broker_port])
        if e.status == "ok"
    )
    for later in (False, True):
        folder = tmp_path / f"later{later}"
        reader, options, offset, rows = watching(folder, name)
        shutil.copy(first, folder / first.name)
        if later:
            offset = drive(reader, options, offset, rows)
        shutil.copy(second, folder / second.name)
        finish(reader, options, drive(reader, options, offset, rows), rows)
        assert Counter(exchange_key(r) for r in rows if r.status == "ok") == want, later


def test_a_file_moved_away_for_a_while_and_back_is_not_read_again(tmp_path):
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 3)
    aside = tmp_path / "aside"
    aside.mkdir()
    folder = tmp_path / "in"
    reader, options, offset, rows = watching(folder, name)
    for n, f in enumerate(files):
        shutil.copy(f, folder / f.name)
        offset = drive(reader, options, offset, rows)
        if n == 1:
            os.rename(folder / files[0].name, aside / files[0].name)
            offset = drive(reader, options, offset, rows)
            os.rename(aside / files[0].name, folder / files[0].name)
            offset = drive(reader, options, offset, rows)
    finish(reader, options, offset, rows)
    assert ok_rows_once(rows, whole)


def test_a_re_read_file_deleted_before_the_read_loses_only_its_own_exchanges(tmp_path):
    """A micro-batch re-reads k-00 and k-01 before its new k-02, and retention deletes k-01
    after the batch was planned. The files read were numbered without it, while the emit rule
    names files by their planned numbers: k-02's rows were judged by k-01's counts and dropped."""
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 4)
    lost = {}
    for when in ("between_triggers", "before_read"):
        folder = tmp_path / when
        reader, options, offset, rows = watching(folder, name)
        for f in files[:2]:
            shutil.copy(f, folder / f.name)
            offset = drive(reader, options, offset, rows)
        shutil.copy(files[2], folder / files[2].name)
        if when == "between_triggers":
            os.unlink(folder / files[1].name)
        end = reader.latestOffset(offset, ReadAllAvailable())
        parts = reader.partitions(offset, end)
        if when == "before_read":
            os.unlink(folder / files[1].name)
        rows += [ex for p in parts for ex in PartitionReader(options, reader.schema)._rows(p)]
        shutil.copy(files[3], folder / files[3].name)
        finish(reader, options, drive(reader, options, end, rows), rows)
        ok = Counter(exchange_key(r) for r in rows if r.status == "ok")
        lost[when] = Counter({key: n for key, n in whole.items() if key[-1] == "ok"}) - ok
    assert lost["before_read"] == lost["between_triggers"]
    assert sum(lost["before_read"].values()) <= 2


def _logrotate(folder, i: int, style: str) -> None:
    if style == "copytruncate":  # copied aside, then emptied in place; the writer starts it again
        for n in range(i - 1, 0, -1):
            os.rename(folder / f"k.pcap.{n}", folder / f"k.pcap.{n + 1}")
        shutil.copy(folder / "k.pcap", folder / "k.pcap.1")
        os.truncate(folder / "k.pcap", 0)
    elif style == "numbered":
        for n in range(i - 1, 0, -1):
            os.rename(folder / f"k.pcap.{n}", folder / f"k.pcap.{n + 1}")
        os.rename(folder / "k.pcap", folder / "k.pcap.1")
    else:
        os.rename(folder / "k.pcap", folder / f"k.pcap-2026010{i}")


@pytest.mark.parametrize("style", ["numbered", "dateext", "copytruncate"])
@pytest.mark.parametrize("when", ["before_partitions", "before_read"])
def test_logrotate_racing_a_micro_batch_reads_each_file_once(tmp_path, style, when):
    """The rotation lands after latestOffset planned a micro-batch reading k.pcap: before
    partitions() (as on every restart from a checkpoint logged then), or before the read. The
    files the batch planned are read where they went, each packet once."""
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "time", 4)
    folder = tmp_path / "logs"
    reader, options, offset, rows = watching(folder, name)
    shutil.copy(files[0], folder / "k.pcap")
    for i in range(1, len(files) + 1):
        end = reader.latestOffset(offset, ReadAllAvailable())
        if i < len(files) and when == "before_partitions":
            _logrotate(folder, i, style)
            (folder / "k.pcap").write_bytes(files[i].read_bytes())
        parts = reader.partitions(offset, end)
        if i < len(files) and when == "before_read":
            _logrotate(folder, i, style)
            (folder / "k.pcap").write_bytes(files[i].read_bytes())
        rows += [ex for p in parts for ex in PartitionReader(options, reader.schema)._rows(p)]
        offset = end
    finish(reader, options, offset, rows)
    assert ok_rows_once(rows, whole)
