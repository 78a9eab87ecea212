"""A capture larger than splitSize is read by several tasks, each taking whole TCP connections.

An index pass gives each task the records of its own connections (``capture.index``): the tests
without Spark check that the tasks' rows together are read_capture's, on interleaved sessions,
pcapng and a rotated session; the Spark ones that the split DataFrame equals one partition's.
"""

from __future__ import annotations

import gzip
import os
import struct
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from chispa import assert_df_equality

from kafka_protocol_source import read_capture
from kafka_protocol_source.pipeline import CaptureOptions, read_with
from kafka_protocol_source.spark import naming_pass
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import (
    CapturePartition,
    PartitionReader,
    plan_partitions,
    slice_of,
    slice_scope,
)
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.spec.api_keys import METADATA
from kafka_protocol_source.views.topic_names import TOPIC_NAMING_APIS

from ..cuts import Cut, pieces, segments_of
from .bigcapture import _broker_port, replicate, with_client
from .expected import SAMPLES, TANSU_CONFLUENT
from .test_variant import _read_back

COLUMNS = [
    "capture_file",
    "connection_id",
    "correlation_id",
    "api_name",
    "api_version",
    "status",
    "latency_ms",
    "request_size",
    "response_size",
    "to_json(request) AS request",
    "to_json(response) AS response",
]


@pytest.fixture(scope="module")
def big_capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "four_sessions.pcap"
    assert replicate(TANSU_CONFLUENT, path, copies=4) == 4
    return path


def test_split_capture_gives_the_same_rows_as_one_partition(spark, big_capture):
    size = big_capture.stat().st_size
    whole = spark.read.format("kafka-wire").load(str(big_capture))
    split = spark.read.format("kafka-wire").option("splitSize", "20000").load(str(big_capture))
    assert whole.rdd.getNumPartitions() == 1
    assert split.rdd.getNumPartitions() == -(-size // 20000) >= 8
    assert_df_equality(split.selectExpr(*COLUMNS), whole.selectExpr(*COLUMNS), ignore_row_order=True)
    statuses = Counter(r.status for r in split.select("status").collect())
    assert statuses == Counter(e.status for e in read_capture(big_capture)) == {"ok": 4 * 69}


def test_split_records_view_equals_one_partition(spark, big_capture):
    cols = ["connection_id", "direction", "topic", "offset", "key", "value", "compression"]
    whole = spark.read.format("kafka-wire").option("view", "records").load(str(big_capture)).select(*cols)
    split = (
        spark.read.format("kafka-wire")
        .option("view", "records")
        .option("splitSize", "20000")
        .load(str(big_capture))
        .select(*cols)
    )
    assert_df_equality(split, whole, ignore_row_order=True)
    assert whole.where("direction = 'produce'").count() == 4 * 30


def _interleaved_copies(source: Path, target: Path, copies: int) -> Path:
    """``copies`` sessions of ``source`` from clients of their own, 1 ms apart, so their packets interleave."""
    data = source.read_bytes()
    port = _broker_port(data)
    packets, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, pos)
        packets.append((sec * 10**6 + usec, data[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    merged = sorted(
        (t + n * 1000, n, i, with_client(f, port, bytes((10, 7, 0, n))))
        for n in range(copies)
        for i, (t, f) in enumerate(packets)
    )
    with open(target, "wb") as out:
        out.write(data[:24])
        for us, _, _, frame in merged:
            out.write(struct.pack("<IIII", us // 10**6, us % 10**6, len(frame), len(frame)) + frame)
    return target


def _read_split(parts) -> list:
    rows = []
    for p in parts:
        options = CaptureOptions(issues_here=p.index == 0, record_runs=p.runs)
        rows += read_with(list(p.paths), options, slice_scope(p.index, p.count, None))
    return rows


def _same_rows(got, want) -> None:
    assert len(got) == len(want)
    assert Counter(map(repr, got)) == Counter(map(repr, want))


@pytest.mark.parametrize("name", ["tansu_confluent_kafka_all_codecs.pcap", "tansu_aiokafka_all_codecs.pcapng"])
def test_index_split_reads_give_the_exchanges_of_one_read(tmp_path, name):
    """Without Spark: each partition reads only its runs, and together they give read_capture's rows."""
    path = SAMPLES / name
    if path.suffix == ".pcap":
        path = _interleaved_copies(path, tmp_path / "interleaved.pcap", copies=6)
    parts = plan_partitions([str(path)], path.stat().st_size // 8, index=True)
    assert len(parts) >= 8 and all(str(path) in p.runs for p in parts)
    # Each packet record is read once; the file's header (section header and interfaces) by each.
    assert sum(p.runs[str(path)].byte_count for p in parts) < path.stat().st_size + 512 * len(parts)
    _same_rows(_read_split(parts), list(read_capture(path)))


@pytest.mark.parametrize("view", ["exchanges", "records"])
def test_a_gzipped_capture_splits_by_its_decompressed_bytes(tmp_path, view):
    """Each task decompresses the file, parses only its runs, and the rows are one read's."""
    plain = _interleaved_copies(TANSU_CONFLUENT, tmp_path / "interleaved.pcap", copies=6)
    path = tmp_path / "interleaved.pcap.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()))
    parts = plan_partitions([str(path)], path.stat().st_size // 8, index=True)
    assert len(parts) >= 8 and all(str(path) in p.runs for p in parts)
    assert sum(p.runs[str(path)].byte_count for p in parts) == plain.stat().st_size + 24 * (len(parts) - 1)
    options = ReadOptions.parse({"path": str(path), "view": view})
    reader = PartitionReader(options, default_schema(options))
    split = [repr(_read_back(r)) for p in parts for batch in reader.read(p) for r in batch.to_pylist()]
    whole = [repr(_read_back(r)) for batch in reader.read(CapturePartition(str(path))) for r in batch.to_pylist()]
    assert len(whole) > 100 and Counter(split) == Counter(whole)


def test_index_split_reads_of_a_rotated_session(tmp_path):
    """Files of one session are indexed each; connections still span the files."""
    whole = _interleaved_copies(TANSU_CONFLUENT, tmp_path / "whole.pcap", copies=6)
    files = [c.write(tmp_path / f"piece{i}.pcap") for i, c in enumerate(pieces(segments_of(whole), 3))]
    parts = plan_partitions([str(f) for f in files], sum(f.stat().st_size for f in files) // 5, stitch=True, index=True)
    assert len(parts) >= 5 and all(len(p.paths) == 3 and len(p.runs) == 3 for p in parts)
    _same_rows(_read_split(parts), list(read_capture([str(f) for f in files])))


def test_index_split_reads_of_files_taken_on_two_interfaces(tmp_path):
    """Files that overlap in time are one session, split by connection like any other: each task
    reads its connections' records of both files, merged by time, and the rows are one read's of
    the traffic (every exchange once, not once per file)."""
    from tests.framing.test_overlapping_files import _per_interface_rotated

    whole = _interleaved_copies(TANSU_CONFLUENT, tmp_path / "whole.pcap", copies=6)
    files = [str(f) for f in _per_interface_rotated(segments_of(whole), tmp_path)]
    parts = plan_partitions(files, sum(map(os.path.getsize, files)) // 5, stitch=True, index=True)
    assert len(parts) >= 5 and all(len(p.paths) == 6 for p in parts)
    once = list(read_capture(Cut(segments_of(whole)).write(tmp_path / "once.pcap")))
    got = _read_split(parts)
    assert len(once) > 100 and Counter(map(_placed, got)) == Counter(map(_placed, once))


def _placed(e) -> tuple:
    """An exchange by where its bytes are in its connection, whichever file they came from."""
    return e.connection_id, e.correlation_id, e.status, e.request_span, e.response_span


def _fetching_connection_cut_in_two(tmp_path: Path) -> Path:
    """The confluent session with the connection of its Fetches (by topic id) cut in two at its
    first Fetch: what it carried before (its Metadata among it) moves to a client port of its own,
    so that every topic its Fetches name by id is named by another connection."""
    fetch = next(e for e in read_capture(TANSU_CONFLUENT) if e.api_key == 1 and e.api_version >= 13)
    port, other = int(fetch.client_address.rsplit(":", 1)[1]), 61000

    def moved(s):
        if s.packet_index >= fetch.request_packet:
            return s
        if s.src_port == port:
            return s._replace(src_port=other)
        return s._replace(dst_port=other) if s.dst_port == port else s

    return Cut(tuple(map(moved, segments_of(TANSU_CONFLUENT)))).write(tmp_path / "cut_in_two.pcap")


def _slices_apart_from_naming(path: Path) -> int:
    """A number of slices for which the connection of ``path``'s Fetches (by topic id) is read by
    a slice that reads none of the connections whose responses name topics."""
    exchanges = list(read_capture(path))
    fetches = [e for e in exchanges if e.api_key == 1 and e.api_version >= 13]
    fetching = {_endpoints(e) for e in fetches}
    naming = [e for e in exchanges if e.api_key in TOPIC_NAMING_APIS and e.response]
    naming = {_endpoints(e) for e in naming}
    assert len(fetching) == 1 and naming and not fetching & naming
    for count in range(2, 65):
        if {slice_of(f, count) for f in fetching}.isdisjoint(slice_of(n, count) for n in naming):
            return count
    raise AssertionError("no count puts them apart")


def _endpoints(exchange) -> tuple:
    """A connection's endpoints in canonical order, as the index pass hands them to slice_of."""
    (cip, cport), (bip, bport) = (a.rsplit(":", 1) for a in (exchange.client_address, exchange.broker_address))
    client, broker = (cip, int(cport)), (bip, int(bport))
    return (*client, *broker) if client <= broker else (*broker, *client)


@pytest.mark.parametrize("view", ["records", "lag"])
def test_split_reads_name_topics_from_other_slices_connections(tmp_path, view):
    """A slice reads only its own connections; topics its Fetches give by id are named by a
    Metadata response another slice reads, as one read of the whole capture names them."""
    path = _fetching_connection_cut_in_two(tmp_path)
    count = _slices_apart_from_naming(path)
    options = ReadOptions.parse({"path": str(path), "view": view})
    schema = default_schema(options)

    def rows(partitions) -> list:
        reader = PartitionReader(options, schema)
        return [r for p in partitions for batch in reader.read(p) for r in batch.to_pylist()]

    whole = rows(plan_partitions([str(path)], 1 << 40, index=True))
    naming_pass.forget()
    parts = plan_partitions([str(path)], -(-path.stat().st_size // count), index=True)
    assert len(parts) == count and all(str(path) in p.runs for p in parts)
    # each packet record read once, the file header by each
    assert sum(p.runs[str(path)].byte_count for p in parts) == path.stat().st_size + 24 * (len(parts) - 1)
    fetched = [r for r in whole if view == "lag" or r["direction"] == "fetch"]
    assert fetched and all(r["topic"] for r in fetched)  # named, though not by their own connection
    assert Counter(map(repr, rows(parts))) == Counter(map(repr, whole))
    assert naming_pass.kept() == 1


def test_with_apis_that_name_no_topic_no_slice_names_one(tmp_path):
    """apis=Fetch decodes no Metadata: one read names no topic given by id, and neither do the
    slices, which do no naming read for it."""
    path = _fetching_connection_cut_in_two(tmp_path)
    count = _slices_apart_from_naming(path)
    options = ReadOptions.parse({"path": str(path), "view": "records", "apis": "Fetch"})
    reader = PartitionReader(options, default_schema(options), apis=options.apis)
    naming_pass.forget()
    split = plan_partitions([str(path)], -(-path.stat().st_size // count), index=True)
    rows = [r for p in split for batch in reader.read(p) for r in batch.to_pylist()]
    whole = [r for batch in reader.read(CapturePartition(str(path))) for r in batch.to_pylist()]
    assert Counter(map(repr, rows)) == Counter(map(repr, whole))
    assert whole and not any(r["topic"] for r in whole)
    assert naming_pass.kept() == 0


def test_slices_whose_connections_name_their_topics_do_no_naming_read():
    """In the confluent session the fetching connection asks for Metadata itself before it fetches."""
    options = ReadOptions.parse({"path": str(TANSU_CONFLUENT), "view": "records"})
    reader = PartitionReader(options, default_schema(options))
    naming_pass.forget()
    parts = plan_partitions([str(TANSU_CONFLUENT)], TANSU_CONFLUENT.stat().st_size // 4, index=True)
    rows = [r for p in parts for batch in reader.read(p) for r in batch.to_pylist()]
    assert len(parts) >= 4 and rows and all(r["topic"] for r in rows)
    assert naming_pass.kept() == 0


def test_a_naming_read_that_raised_is_made_again_not_taken_up(monkeypatch):
    """A task's naming read that failed (its file rotated away, say) is not what the worker's next
    task names from: that one reads again."""
    calls = []

    def read_with(paths, options):
        calls.append(paths)
        yield SimpleNamespace(api_key=METADATA, response={"topics": [{"topic_id": "a", "name": "one"}]})
        if len(calls) == 1:
            raise OSError("rotated away")
        yield SimpleNamespace(api_key=METADATA, response={"topics": [{"topic_id": "b", "name": "two"}]})

    monkeypatch.setattr(naming_pass, "read_with", read_with)
    naming_pass.forget()
    paths, options = [str(TANSU_CONFLUENT)], CaptureOptions()
    first = naming_pass.naming_read(paths, options, lambda ex: True, "key")
    with pytest.raises(OSError):
        first.get("b")
    again = naming_pass.naming_read(paths, options, lambda ex: True, "key")
    assert again is not first and again.get("b") == "two" and len(calls) == 2
    assert naming_pass.naming_read(paths, options, lambda ex: True, "key") is again  # taken up from here on
    naming_pass.forget()


def test_a_segment_written_late_is_waited_for_alike_in_every_split(tmp_path):
    """TCP reassembly waits a number of capture packets for a segment written late. Counted in
    the packets a task read, the wait of a task that reads some connections only was longer than
    one read's: the rows depended on splitSize (one task: a gap, more: ok)."""
    s = SAMPLES / "mock_kafka_python_all_codecs.pcap"
    port = _broker_port(s.read_bytes())
    small = []
    for g in segments_of(s):
        for k in range(0, max(len(g.payload), 1), 40):
            small.append(g._replace(seq=(g.seq + k) & 0xFFFFFFFF, payload=g.payload[k : k + 40]))
    other = [  # the same traffic from another client host: other connections, in other slices
        g._replace(
            src_ip="127.0.0.2" if g.src_port != port else g.src_ip,
            dst_ip="127.0.0.2" if g.dst_port != port else g.dst_ip,
        )
        for g in small
    ]
    i = next(
        i
        for i, g in enumerate(small)
        if g.dst_port == port and len(g.payload) == 40 and all(small[i + d].dst_port == port for d in (1, 2))
    )
    late = small[i + 1]
    end = (late.seq + len(late.payload)) & 0xFFFFFFFF
    acked = next(
        j for j in range(i + 2, len(small)) if small[j].src_port == port and (small[j].ack - end) & 0xFFFFFFFF < 1 << 31
    )
    answer = next(k for k in range(acked + 1, len(small)) if small[k].src_port == port)
    order = small[: i + 1] + small[i + 2 : acked + 1] + other[:300] + small[acked + 1 : answer + 1] + [late]
    order += small[answer + 1 :] + other[300:]
    order = [g._replace(timestamp_ns=small[0].timestamp_ns + n * 1000) for n, g in enumerate(order)]
    path = Cut(tuple(order)).write(tmp_path / "busy.pcap")
    one = Counter(map(_placed, _read_split(plan_partitions([str(path)], 1 << 40, index=True))))
    for count in (2, 4, 12):
        parts = plan_partitions([str(path)], -(-path.stat().st_size // count), index=True)
        assert len(parts) > 1
        assert Counter(map(_placed, _read_split(parts))) == one, count
