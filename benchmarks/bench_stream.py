"""Benchmark a stream's micro-batches against one read of the same files.

Each micro-batch of ``readStream`` re-reads the end of the capture before its new packets (the
last ``idleTimeout`` of capture time), so that connections carry over from file to file. This
measures what that costs: the split benchmark's capture of interleaved sessions (built once, in
/tmp, by ``bench_splits.build``) is rotated by time into ``--files`` files, as ``tcpdump -G``
would, and ``idleTimeout`` is set to the span of ``--reach`` of them. Then, in this process:

* ``read_capture`` of all the files at once (the peer);
* a stream reader following a folder into which the files land one at a time, one micro-batch
  per file (``ReadMaxFiles(1)``, no Spark: the rows its partitions give, as a Python worker
  builds them before Arrow), and a last one once the folder is quiet.

Printed: CPU seconds of each, best of ``--repeat``; the stream's over the peer's; and whether the
stream's rows are the peer's (api key, version, correlation id, client id and status of each).

    python benchmarks/bench_stream.py [--size-mb 20] [--files 12] [--reach 5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import struct
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks and tests (capture builders)

from pyspark.sql.streaming.datasource import ReadMaxFiles

from benchmarks.bench_capture import sample_seeds
from benchmarks.bench_splits import build
from kafka_protocol_source import read_capture
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import PartitionReader
from kafka_protocol_source.spark.source import default_schema
from kafka_protocol_source.spark.stream import KafkaWireStreamReader

_HEADER, _RECORD = struct.Struct("<IHHiIII"), struct.Struct("<IIII")


def rotate(path: Path, files: int) -> list[tuple[bytes, list[bytes]]]:
    """The records of a microsecond pcap cut into ``files`` equal spans of capture time: (header, records) each."""
    data = path.read_bytes()
    header, records, at = data[: _HEADER.size], [], _HEADER.size
    while at + _RECORD.size <= len(data):
        sec, usec, caplen, _ = _RECORD.unpack_from(data, at)
        records.append((sec * 10**6 + usec, data[at : at + _RECORD.size + caplen]))
        at += _RECORD.size + caplen
    first, last = records[0][0], records[-1][0]
    span = (last - first) // files + 1
    pieces: list[list[bytes]] = [[] for _ in range(files)]
    for us, record in records:
        pieces[min(files - 1, (us - first) // span)].append(record)
    return [(header, piece) for piece in pieces]


def _key(e) -> tuple:
    return e.api_key, e.api_version, e.correlation_id, e.client_id, e.status


def stream(pieces, folder: Path, ports: str, idle_s: float) -> tuple[float, Counter]:
    """CPU seconds of following ``folder`` as the pieces land, one micro-batch each, and the rows."""
    options = ReadOptions.parse(
        {"path": str(folder), "ports": ports, "idleTimeout": str(idle_s), "quietTimeout": "3600"}
    )
    reader = KafkaWireStreamReader(options, default_schema(options))
    offset, rows = reader.initialOffset(), Counter[tuple]()

    def drive(offset):
        while (end := reader.latestOffset(offset, ReadMaxFiles(1))) != offset:
            for p in reader.partitions(offset, end):
                rows.update(map(_key, PartitionReader(options, reader.schema)._rows(p)))
            offset = end
        return offset

    cpu = 0.0
    for n, (header, records) in enumerate(pieces):
        (folder / f"cap-{n:03d}.pcap").write_bytes(header + b"".join(records))
        start = time.process_time()
        offset = drive(offset)
        cpu += time.process_time() - start
    start = time.process_time()
    reader.quiet_ns = 0  # the folder is quiet: what is open is given up
    drive(offset)
    return cpu + time.process_time() - start, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=20)
    ap.add_argument("--files", type=int, default=12)
    ap.add_argument("--reach", type=float, default=5, help="idleTimeout, in files' spans")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--path", type=Path, default=Path("/tmp/kafka_wire_bench_stream.pcap"))
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    if args.rebuild or not args.path.exists():
        build(args.path, args.size_mb)
    pieces = rotate(args.path, args.files)
    ports = ",".join(sorted({str(port) for _, port in sample_seeds()}))
    first = _RECORD.unpack_from(pieces[0][1][0])
    last = _RECORD.unpack_from(pieces[-1][1][-1])
    span_s = (last[0] - first[0]) + (last[1] - first[1]) / 1e6
    idle_s = args.reach * span_s / args.files
    work = Path(tempfile.mkdtemp())
    files = []
    for n, (header, records) in enumerate(pieces):
        files.append(work / f"whole-{n:03d}.pcap")
        files[-1].write_bytes(header + b"".join(records))
    batch_cpu, stream_cpu = [], []
    for _ in range(args.repeat):
        start = time.process_time()
        batch = Counter(map(_key, read_capture([str(f) for f in files], ports=[int(p) for p in ports.split(",")])))
        batch_cpu.append(time.process_time() - start)
        folder = work / "live"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        cpu, rows = stream(pieces, folder, ports, idle_s)
        stream_cpu.append(cpu)
    shutil.rmtree(work)
    print(
        f"capture: {args.path} ({args.path.stat().st_size / 2**20:.1f} MB, {span_s:.1f} s of capture time) in"
        f" {args.files} files; idleTimeout {idle_s:.2f} s ({args.reach:g} files)"
    )
    print(f"read_capture of the files: {min(batch_cpu):.2f} CPU s, {sum(batch.values())} rows")
    print(f"stream, one micro-batch per file: {min(stream_cpu):.2f} CPU s, {sum(rows.values())} rows")
    print(f"stream / read_capture: {min(stream_cpu) / min(batch_cpu):.2f}; same rows: {rows == batch}")


if __name__ == "__main__":
    main()
