"""Rotated captures: a folder of pieces reads as the whole capture, in batch and in streaming.

Sample captures are cut into pieces by packet count and by time (so frames and request/response
pairs span files) and compared with a read of the whole file as a multiset of
(api_key, api_version, correlation_id, client_id, status).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark.emit_rule import ANSWERED_LATE
from tests.cuts import by_direction, segments_of
from tests.samples.catalog import sample

from .rotated_pieces import SAMPLES, by_time, exchange_key, rotated_pieces

# Seconds without a new packet after which the streams below give up requests still open: longer
# than a micro-batch (or a restart) here takes, so only the end of the test is quiet that long.
QUIET = 6.0


def _read(spark, folder, name, **options):
    return (
        spark.read.format("kafka-wire").option("ports", sample(name).broker_port).options(**options).load(str(folder))
    )


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("how,count", [("packets", 5), ("packets", 7), ("time", 3), ("time", 6)])
def test_a_folder_of_rotated_pieces_reads_as_the_whole_capture(spark, tmp_path, name, how, count):
    files, whole = rotated_pieces(tmp_path, name, how, count)
    rows = _read(spark, files[0].parent, name).collect()
    assert Counter(exchange_key(r) for r in rows) == whole
    # A spanning exchange belongs to the file where its request started.
    assert {r.capture_file for r in rows} <= {str(f) for f in files}


def test_stitching_can_be_turned_off_and_then_each_file_is_its_own_capture(spark, tmp_path):
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "packets", 7)  # these cuts split exchanges
    alone = Counter()
    for f in files:
        alone.update(exchange_key(e) for e in read_capture(f, ports=[sample(name).broker_port]))
    rows = _read(spark, files[0].parent, name, stitch="false").collect()
    assert Counter(exchange_key(r) for r in rows) == alone != whole


def test_files_of_different_sessions_are_read_separately(spark, tmp_path):
    a, whole_a = rotated_pieces(tmp_path, SAMPLES[0], "packets", 3)
    b, whole_b = rotated_pieces(tmp_path, SAMPLES[1], "packets", 3)
    folder = tmp_path / "mixed"
    folder.mkdir()
    for f in a + b:
        shutil.copy(f, folder / f"{f.parent.name}-{f.name}")
    ports = f"{sample(SAMPLES[0]).broker_port},{sample(SAMPLES[1]).broker_port}"
    rows = spark.read.format("kafka-wire").option("ports", ports).load(str(folder)).collect()
    assert Counter(exchange_key(r) for r in rows) == whole_a + whole_b


def _start(spark, folder, checkpoint, name, table, quiet=QUIET, **options):
    """A stream into a memory table, or (``table`` a path) into Parquet files, which a restart
    from the checkpoint can continue exactly once."""
    stream = (
        spark.readStream.format("kafka-wire")
        .option("ports", sample(name).broker_port)
        .option("quietTimeout", str(quiet))
        .options(**options)
        .load(str(folder))
        .writeStream.option("checkpointLocation", str(checkpoint))
    )
    if isinstance(table, str):
        return stream.format("memory").queryName(table)
    return stream.format("parquet").option("path", str(table))


def _drain(query, quiet=QUIET):
    query.processAllAvailable()
    time.sleep(quiet + 0.5)  # the folder goes quiet: requests still open are given up
    query.processAllAvailable()


@pytest.mark.parametrize("name", SAMPLES)
def test_a_stream_fed_file_by_file_with_a_restart_equals_the_whole_capture(spark, tmp_path, name):
    files, whole = rotated_pieces(tmp_path, name, "time", 5)
    folder, checkpoint, out = tmp_path / "in", tmp_path / "checkpoint", tmp_path / "out"
    folder.mkdir()
    query = _start(spark, folder, checkpoint, name, out, quiet=12).start()
    try:
        for f in files[:3]:
            shutil.copy(f, folder)
            query.processAllAvailable()
    finally:
        query.stop()
    query = _start(spark, folder, checkpoint, name, out, quiet=12).start()  # from the checkpoint
    try:
        for f in files[3:]:
            shutil.copy(f, folder)
            query.processAllAvailable()
        _drain(query, quiet=12)
    finally:
        query.stop()
    rows = spark.read.parquet(str(out)).collect()
    assert Counter(exchange_key(r) for r in rows) == whole


def test_available_now_with_one_file_per_trigger_equals_the_whole_capture(spark, tmp_path):
    name = SAMPLES[1]
    files, whole = rotated_pieces(tmp_path, name, "packets", 4)
    query = (
        _start(spark, files[0].parent, tmp_path / "ck", name, "available_now", maxFilesPerTrigger="1")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(batches) >= len(files) - 1  # one file per micro-batch (a file may complete nothing)
    rows = spark.sql("SELECT * FROM available_now").collect()
    # availableNow stops at once: requests still open at the very end are not given up.
    still_open = Counter(
        exchange_key(e)
        for e in read_capture(sample(name).path, ports=[sample(name).broker_port])
        if e.status == "unanswered"
    )
    assert Counter(exchange_key(r) for r in rows) == whole - still_open


def test_a_growing_file_is_read_to_its_last_whole_packet_and_again_as_it_grows(spark, tmp_path):
    name = SAMPLES[0]
    files, whole = rotated_pieces(tmp_path, name, "packets", 2)
    folder = tmp_path / "in"
    folder.mkdir()
    data = files[0].read_bytes() + files[1].read_bytes()[24:]  # one pcap: the second piece's records appended
    growing = folder / "live.pcap"
    cut = len(files[0].read_bytes()) + 1000  # in the middle of a record
    # quietTimeout is wall-clock: the folder must not go quiet between the two writes, or the
    # requests open at the cut are rightly given up as unanswered. So the first write waits for
    # the query to be up, and the timeout leaves a slow machine room for one micro-batch.
    quiet = 15.0
    query = _start(spark, folder, tmp_path / "ck", name, "growing", quiet=quiet).start()
    try:
        growing.write_bytes(data[:cut])
        query.processAllAvailable()
        with open(growing, "ab") as f:
            f.write(data[cut:])
        _drain(query, quiet)
        rows = spark.sql("SELECT * FROM growing").collect()
    finally:
        query.stop()
    assert Counter(exchange_key(r) for r in rows) == whole
    assert not [r for r in rows if r.status == "capture_error"]  # the cut record was waited for


def test_a_file_copied_in_with_an_old_modification_time_is_read(spark, tmp_path):
    name = SAMPLES[1]
    files, whole = rotated_pieces(tmp_path, name, "packets", 3)
    folder = tmp_path / "in"
    folder.mkdir()
    query = _start(spark, folder, tmp_path / "ck", name, "old_mtime").start()
    try:
        for i, f in enumerate(files):
            target = shutil.copy(f, folder)
            if i == 2:
                os.utime(target, (time.time() - 3600, time.time() - 3600))  # cp -p of an older file
            query.processAllAvailable()
        _drain(query)
        rows = spark.sql("SELECT * FROM old_mtime").collect()
    finally:
        query.stop()
    assert Counter(exchange_key(r) for r in rows) == whole


def test_a_corrupt_file_among_them_says_what_went_wrong_and_the_rest_is_all_there(spark, tmp_path):
    name = SAMPLES[1]
    files, whole = rotated_pieces(tmp_path, name, "packets", 3)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "broken.pcap").write_bytes(b"this is not a capture at all\n" * 10)
    query = _start(spark, folder, tmp_path / "ck", name, "with_corrupt").start()
    try:
        for f in files:
            shutil.copy(f, folder)
            query.processAllAvailable()
        _drain(query)
        rows = spark.sql("SELECT * FROM with_corrupt").collect()
    finally:
        query.stop()
    broken = [r for r in rows if r.capture_file.endswith("broken.pcap")]
    assert [r.status for r in broken] == ["capture_error"] and "not a pcap" in broken[0].error
    assert Counter(exchange_key(r) for r in rows if r not in broken) == whole


def test_the_records_view_streams_each_record_once(spark, tmp_path):
    name = SAMPLES[0]
    files, _ = rotated_pieces(tmp_path, name, "time", 4)
    expected = _read(spark, files[0].parent, name, view="records").count()
    folder = tmp_path / "in"
    folder.mkdir()
    query = _start(spark, folder, tmp_path / "ck", name, "records_stream", view="records").start()
    try:
        for f in files:
            shutil.copy(f, folder)
            query.processAllAvailable()
        _drain(query)
        got = spark.sql("SELECT count(*) FROM records_stream").first()[0]
    finally:
        query.stop()
    assert got == expected > 0


def test_a_file_truncated_in_place_after_it_was_read_is_a_row_and_the_stream_goes_on(spark, tmp_path):
    name = SAMPLES[1]
    files, _ = rotated_pieces(tmp_path, name, "packets", 3)
    folder = tmp_path / "in"
    folder.mkdir()
    query = _start(spark, folder, tmp_path / "ck", name, "truncated").start()
    try:
        shutil.copy(files[0], folder)
        query.processAllAvailable()
        before = spark.sql("SELECT count(*) FROM truncated").first()[0]
        target = folder / files[0].name
        target.write_bytes(target.read_bytes()[:2000])  # cut in place, as a misbehaving rotation would
        query.processAllAvailable()
        shutil.copy(files[1], folder)
        query.processAllAvailable()
        rows = spark.sql("SELECT * FROM truncated").collect()
    finally:
        query.stop()
    shrunk = [r for r in rows if r.status == "capture_error"]
    assert len(shrunk) == 1 and "shrank" in shrunk[0].error and shrunk[0].capture_file == str(target)
    assert len(rows) > before + 1  # the next file was read too


def test_two_capture_sessions_in_one_folder_stream_as_the_batch_reads_them(spark, tmp_path):
    """Each session's micro-batches measure staleness by its own packets: another session's
    newer ones do not make its rows look given up already (20 of 69 rows were lost so)."""
    name = SAMPLES[0]
    s = sample(name)
    segments = segments_of(s.path)
    clients = sorted({seg.src_port for seg in segments if seg.dst_port == s.broker_port})
    folder = tmp_path / "in"
    folder.mkdir()
    for half, ports in (("a", set(clients[::2])), ("b", set(clients[1::2]))):
        own = tuple(seg for seg in segments if seg.src_port in ports or seg.dst_port in ports)
        for i, cut in enumerate(by_time(own, 3)):
            cut.write(folder / f"{half}-{i}.pcap")
    options = {"maxFilesPerTrigger": "1", "idleTimeout": "1"}
    query = _start(spark, folder, tmp_path / "ck", name, "two_sessions", quiet=3, **options).start()
    try:
        _drain(query, quiet=3)
    finally:
        query.stop()
    rows = spark.sql("SELECT * FROM two_sessions").collect()
    assert Counter(exchange_key(r) for r in rows) == Counter(
        exchange_key(r) for r in _read(spark, folder, name).collect()
    )


@pytest.mark.parametrize("idle", ["1", "0.05"])
def test_with_a_short_idle_timeout_nothing_is_lost_and_a_late_answer_says_so(spark, tmp_path, idle):
    """Requests that wait longer than the idle timeout (a JoinGroup 3 s, Fetches 0.5 s) are given
    up as unanswered; an answer that comes in a later micro-batch comes as the exchange again,
    saying so (or, once the re-read no longer holds the request, as a response whose request is
    missing). The re-read of the micro-batch where a request goes stale reaches back to it (it
    once started after it, and the request was never emitted). This checks that none is lost;
    the test below, that no other row comes twice."""
    name = SAMPLES[0]
    files, _ = rotated_pieces(tmp_path, name, "time", 6)
    options = {"maxFilesPerTrigger": "1", "idleTimeout": idle}
    query = _start(spark, files[0].parent, tmp_path / "ck", name, "short_idle", quiet=3, **options).start()
    try:
        _drain(query, quiet=3)
    finally:
        query.stop()
    rows = spark.sql("SELECT * FROM short_idle").collect()
    whole = _read(spark, files[0].parent, name).collect()
    assert {(r.connection_id, r.correlation_id) for r in whole} == {(r.connection_id, r.correlation_id) for r in rows}
    answered = {(r.connection_id, r.correlation_id) for r in rows if r.response_time}
    assert all((r.connection_id, r.correlation_id) in answered for r in whole if r.response_time)
    late = [r for r in rows if r.note and ANSWERED_LATE in r.note]
    unanswered = {(r.connection_id, r.correlation_id) for r in rows if r.status == "unanswered"}
    assert all(r.status == "ok" and (r.connection_id, r.correlation_id) in unanswered for r in late)
    assert bool(late) == (idle == "0.05")
    if idle == "1":  # the JoinGroup goes stale in the micro-batch its answer comes in: one row, whole
        joins = [r.status for r in rows if r.api_name == "JoinGroup"]
        assert joins == [r.status for r in whole if r.api_name == "JoinGroup"]


@pytest.mark.parametrize("name,per_trigger", [(SAMPLES[0], "1"), (SAMPLES[1], "2")])
def test_with_an_idle_timeout_shorter_than_a_micro_batch_each_row_comes_once(spark, tmp_path, name, per_trigger):
    """Rows were owned by the packet where a read got to them: a re-read joining a connection
    mid-stream frames its bytes only once the tcp stage trusts the start, and one starting
    between a request and its response reads the response as unpaired at the connection's
    close, so rows the micro-batch before had emitted came again (4 and 10 of them here). No
    request here waits longer than the micro-batch it is sent in, so the stream is the batch."""
    files, _ = rotated_pieces(tmp_path, name, "time", 6)
    options = {"maxFilesPerTrigger": per_trigger, "idleTimeout": "1"}
    table = f"each_once_{per_trigger}"
    query = _start(spark, files[0].parent, tmp_path / "ck", name, table, quiet=3, **options).start()
    try:
        _drain(query, quiet=3)
    finally:
        query.stop()
    rows = spark.sql(f"SELECT * FROM {table}").collect()
    whole = _read(spark, files[0].parent, name).collect()
    assert Counter(map(_row, rows)) == Counter(map(_row, whole))


def _row(r):
    return r.connection_id, r.correlation_id, r.status


def test_one_capture_per_direction_streams_as_one_capture(spark, tmp_path):
    """Two writers, one per direction, land their rotated files in the folder a pair at a time.
    Each was a capture of its own: not one request met its response."""
    name = SAMPLES[0]
    s = sample(name)
    to_broker, from_broker = by_direction(segments_of(s.path), s.broker_port)
    sides = [by_time(to_broker.segments, 3), by_time(from_broker.segments, 3)]
    folder, src = tmp_path / "in", tmp_path / "src"
    folder.mkdir()
    src.mkdir()
    query = _start(spark, folder, tmp_path / "ck", name, "per_direction").start()
    try:
        for n, pair in enumerate(zip(*sides, strict=True)):
            for prefix, piece in zip(("in", "out"), pair, strict=True):
                shutil.copy(piece.write(src / f"{prefix}-{n:02d}.pcap"), folder)
            query.processAllAvailable()
        _drain(query)
    finally:
        query.stop()
    rows = spark.sql("SELECT * FROM per_direction WHERE status = 'ok'").collect()
    whole = Counter(exchange_key(e) for e in read_capture(s.path, ports=[s.broker_port]) if e.status == "ok")
    assert Counter(exchange_key(r) for r in rows) == whole
