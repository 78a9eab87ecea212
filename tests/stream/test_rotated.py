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
from pyspark.sql.streaming.datasource import ReadMaxFiles

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark.emit_rule import ANSWERED_LATE
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.spark.stream import KafkaWireStreamReader
from tests.cuts import Cut, pieces, segments_of
from tests.samples.catalog import sample

SAMPLES = ("tansu_confluent_kafka_all_codecs", "mock_kafka_python_all_codecs")
# Seconds without a new packet after which the streams below give up requests still open: longer
# than a micro-batch (or a restart) here takes, so only the end of the test is quiet that long.
QUIET = 6.0


def _key(r):
    return r.api_key, r.api_version, r.correlation_id, r.client_id, r.status


def by_time(segments, count: int) -> list[Cut]:
    """``count`` pieces covering equal spans of capture time (``tcpdump -G`` style)."""
    first, last = segments[0].timestamp_ns, segments[-1].timestamp_ns
    step = (last - first) / count + 1
    out = [[] for _ in range(count)]
    for s in segments:
        out[min(count - 1, int((s.timestamp_ns - first) / step))].append(s)
    return [Cut(tuple(p)) for p in out if p]


def _pieces(tmp_path, name: str, how: str, count: int) -> tuple[list, Counter]:
    s = sample(name)
    segments = segments_of(s.path)
    cuts = pieces(segments, count) if how == "packets" else by_time(segments, count)
    src = tmp_path / f"{name}-{how}-{count}"
    src.mkdir()
    files = [c.write(src / f"k-{i:02d}.pcap") for i, c in enumerate(cuts)]
    whole = Counter(_key(e) for e in read_capture(s.path, ports=[s.broker_port]))
    return files, whole


def _read(spark, folder, name, **options):
    return (
        spark.read.format("kafka-wire").option("ports", sample(name).broker_port).options(**options).load(str(folder))
    )


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("how,count", [("packets", 5), ("packets", 7), ("time", 3), ("time", 6)])
def test_a_folder_of_rotated_pieces_reads_as_the_whole_capture(spark, tmp_path, name, how, count):
    files, whole = _pieces(tmp_path, name, how, count)
    rows = _read(spark, files[0].parent, name).collect()
    assert Counter(_key(r) for r in rows) == whole
    # A spanning exchange belongs to the file where its request started.
    assert {r.capture_file for r in rows} <= {str(f) for f in files}


def test_stitching_can_be_turned_off_and_then_each_file_is_its_own_capture(spark, tmp_path):
    name = SAMPLES[0]
    files, whole = _pieces(tmp_path, name, "packets", 7)  # these cuts split exchanges
    alone = Counter()
    for f in files:
        alone.update(_key(e) for e in read_capture(f, ports=[sample(name).broker_port]))
    rows = _read(spark, files[0].parent, name, stitch="false").collect()
    assert Counter(_key(r) for r in rows) == alone != whole


def test_files_of_different_sessions_are_read_separately(spark, tmp_path):
    a, whole_a = _pieces(tmp_path, SAMPLES[0], "packets", 3)
    b, whole_b = _pieces(tmp_path, SAMPLES[1], "packets", 3)
    folder = tmp_path / "mixed"
    folder.mkdir()
    for f in a + b:
        shutil.copy(f, folder / f"{f.parent.name}-{f.name}")
    ports = f"{sample(SAMPLES[0]).broker_port},{sample(SAMPLES[1]).broker_port}"
    rows = spark.read.format("kafka-wire").option("ports", ports).load(str(folder)).collect()
    assert Counter(_key(r) for r in rows) == whole_a + whole_b


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
    files, whole = _pieces(tmp_path, name, "time", 5)
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
    assert Counter(_key(r) for r in rows) == whole


def test_available_now_with_one_file_per_trigger_equals_the_whole_capture(spark, tmp_path):
    name = SAMPLES[1]
    files, whole = _pieces(tmp_path, name, "packets", 4)
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
        _key(e) for e in read_capture(sample(name).path, ports=[sample(name).broker_port]) if e.status == "unanswered"
    )
    assert Counter(_key(r) for r in rows) == whole - still_open


def test_a_growing_file_is_read_to_its_last_whole_packet_and_again_as_it_grows(spark, tmp_path):
    name = SAMPLES[0]
    files, whole = _pieces(tmp_path, name, "packets", 2)
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
    assert Counter(_key(r) for r in rows) == whole
    assert not [r for r in rows if r.status == "capture_error"]  # the cut record was waited for


def test_a_file_copied_in_with_an_old_modification_time_is_read(spark, tmp_path):
    name = SAMPLES[1]
    files, whole = _pieces(tmp_path, name, "packets", 3)
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
    assert Counter(_key(r) for r in rows) == whole


def test_a_corrupt_file_among_them_says_what_went_wrong_and_the_rest_is_all_there(spark, tmp_path):
    name = SAMPLES[1]
    files, whole = _pieces(tmp_path, name, "packets", 3)
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
    assert Counter(_key(r) for r in rows if r not in broken) == whole


def test_the_records_view_streams_each_record_once(spark, tmp_path):
    name = SAMPLES[0]
    files, _ = _pieces(tmp_path, name, "time", 4)
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
    files, _ = _pieces(tmp_path, name, "packets", 3)
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
    assert Counter(_key(r) for r in rows) == Counter(_key(r) for r in _read(spark, folder, name).collect())


@pytest.mark.parametrize("idle", ["1", "0.05"])
def test_with_a_short_idle_timeout_nothing_is_lost_and_a_late_answer_says_so(spark, tmp_path, idle):
    """Requests that wait longer than the idle timeout (a JoinGroup 3 s, Fetches 0.5 s) are given
    up as unanswered; an answer that comes in a later micro-batch comes as the exchange again,
    saying so (or, once the re-read no longer holds the request, as a response whose request is
    missing). The re-read of the micro-batch where a request goes stale reaches back to it (it
    once started after it, and the request was never emitted). This checks that none is lost;
    the test below, that no other row comes twice."""
    name = SAMPLES[0]
    files, _ = _pieces(tmp_path, name, "time", 6)
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
    files, _ = _pieces(tmp_path, name, "time", 6)
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


def test_an_answer_after_the_folder_went_quiet_comes_as_the_exchange_again(tmp_path):
    """Files land one by one and the folder goes quiet after each (a capture rotated slower than
    ``quietTimeout``): every request still open is given up as unanswered then. An answer in a
    later file comes as the exchange again, saying so, as after an idle timeout; it used to be
    dropped, so the JoinGroup that waited out a rebalance was never seen answered."""
    name = SAMPLES[0]
    files, _ = _pieces(tmp_path, name, "time", 6)
    folder = tmp_path / "landing"
    folder.mkdir()
    raw = {"path": str(folder), "ports": str(sample(name).broker_port)}
    options = ReadOptions.parse(raw)
    reader = KafkaWireStreamReader(options, default_schema(options), raw)
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


def _drive(reader, options, offset, rows):
    """Micro-batches until the offset stops moving; their rows are added to ``rows``."""
    while (end := reader.latestOffset(offset, ReadMaxFiles(1))) != offset:
        rows += [ex for p in reader.partitions(offset, end) for ex in PartitionReader(options, reader.schema)._rows(p)]
        offset = end
    return offset


def _stream_reader(folder, name, **extra):
    raw = {"path": str(folder), "ports": str(sample(name).broker_port), **extra}
    options = ReadOptions.parse(raw)
    return KafkaWireStreamReader(options, default_schema(options), raw), options


def test_a_file_that_grows_again_after_it_was_read_is_read_on_not_again_with_min_file_age(tmp_path):
    """With minFileAge, tcpdump's live file is too young again each time it grows: it used to
    drop out of the offset then, and come back as a new file read from its first packet, so
    everything already emitted from it came out twice."""
    name = SAMPLES[0]
    files, whole = _pieces(tmp_path, name, "packets", 2)
    folder = tmp_path / "in"
    folder.mkdir()
    live = folder / "live.pcap"
    live.write_bytes(files[0].read_bytes())
    os.utime(live, (time.time() - 10, time.time() - 10))
    reader, options = _stream_reader(folder, name, minFileAge="5", quietTimeout="3600")
    rows: list = []
    offset = _drive(reader, options, reader.initialOffset(), rows)
    first = len(rows)
    with open(live, "ab") as f:
        f.write(files[1].read_bytes()[24:])  # it grows: too young for minFileAge again
    offset = _drive(reader, options, offset, rows)
    assert len(rows) == first and str(live) in offset["files"]  # waits, and keeps what was read of it
    os.utime(live, (time.time() - 10, time.time() - 10))
    reader.quiet_ns = 0  # the end: what is still open is given up
    _drive(reader, options, offset, rows)
    assert Counter(_key(r) for r in rows if r.status != "unanswered") == whole


def test_a_rotated_file_still_empty_or_half_a_header_is_waited_for_not_a_capture_error(tmp_path):
    """tcpdump's next file stays empty until its first write, and may show part of its header:
    not a capture yet, not a broken one (it was a capture_error row for good, and with FAILFAST
    the query's end)."""
    name = SAMPLES[1]
    files, whole = _pieces(tmp_path, name, "packets", 2)
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(files[0], folder / "k-00.pcap")
    nxt = folder / "k-01.pcap"
    nxt.write_bytes(b"")
    reader, options = _stream_reader(folder, name, quietTimeout="3600", mode="FAILFAST")
    rows: list = []
    offset = _drive(reader, options, reader.initialOffset(), rows)
    assert str(nxt) not in offset["files"]
    nxt.write_bytes(files[1].read_bytes()[:10])  # half the pcap header
    offset = _drive(reader, options, offset, rows)
    assert str(nxt) not in offset["files"]
    nxt.write_bytes(files[1].read_bytes())
    reader.quiet_ns = 0
    _drive(reader, options, offset, rows)
    assert not [r for r in rows if r.status == "capture_error"]
    assert Counter(_key(r) for r in rows if r.status != "unanswered") == whole


def test_files_copied_in_with_old_modification_times_do_not_make_the_folder_quiet(tmp_path):
    """Quiet is no new packet for quietTimeout as the stream sees the folder. Files copied in with
    ``cp -p`` or ``rsync -a`` carry old modification times: the folder counted as quiet at every
    trigger with nothing new, so requests open across two files were given up as unanswered,
    then came again answered late: twice each."""
    name = SAMPLES[0]
    files, whole = _pieces(tmp_path, name, "time", 5)
    folder = tmp_path / "in"
    folder.mkdir()
    reader, options = _stream_reader(folder, name, quietTimeout="30")
    offset, rows = reader.initialOffset(), []
    for f in files:
        target = shutil.copy(f, folder / f.name)
        os.utime(target, (time.time() - 3600, time.time() - 3600))
        offset = _drive(reader, options, offset, rows)
        offset = _drive(reader, options, offset, rows)  # a trigger with nothing new: not quiet yet
    reader.quiet_ns = 0
    _drive(reader, options, offset, rows)
    assert not [r for r in rows if r.note and ANSWERED_LATE in r.note]
    assert Counter(_key(r) for r in rows if r.status != "unanswered") == whole
