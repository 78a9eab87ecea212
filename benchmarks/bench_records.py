"""Benchmark of the records stage: records/s on 1000-record v2 batches, per codec.

Builds each batch once with kafka-python's DefaultRecordBatchBuilder and times our
`decode_records` next to kafka-python's own DefaultRecordBatch reader on the same bytes in
the same run, so the ratio is meaningful on any machine. Both sides materialise every
record's offset, timestamp, key, value and headers. Run:
    python benchmarks/bench_records.py [--records 1000] [--repeat 7]
"""

import argparse
import time

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafka_protocol_source.records import decode_records

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def build_batch(codec: int, count: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, batch_size=1 << 30)
    base = 1_700_000_000_000
    for i in range(count):
        # Typical producer traffic: short keys, ~100-byte JSON-ish values, one header.
        value = b'{"id": %d, "user": "user-%d", "event": "click", "score": %d}' % (i, i % 97, i * 7)
        builder.append(i, base + i, b"key-%d" % (i % 50), value.ljust(100, b" "), [("trace", b"%08d" % i)])
    return bytes(builder.build())


def ours(buf: bytes) -> int:
    return sum(len(batch["records"]) for batch in decode_records(buf))


def kafka_python(buf: bytes) -> int:
    n = 0
    for record in DefaultRecordBatch(bytearray(buf)):
        _ = record.offset, record.timestamp, record.key, record.value, record.headers  # what a reader touches
        n += 1
    return n


def best_rate(decode, buf: bytes, count: int, repeat: int) -> float:
    assert decode(buf) == count
    best = float("inf")
    for _ in range(repeat):
        loops = 0
        start = time.perf_counter()
        while True:
            decode(buf)
            loops += 1
            elapsed = time.perf_counter() - start
            if elapsed > 0.2:
                break
        best = min(best, elapsed / loops)
    return count / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"{'codec':<8}{'bytes':>9}{'ours rec/s':>14}{'kafka-python rec/s':>20}{'ours/kp':>9}")
    for name, codec in CODECS.items():
        buf = build_batch(codec, args.records)
        mine = best_rate(ours, buf, args.records, args.repeat)
        theirs = best_rate(kafka_python, buf, args.records, args.repeat)
        print(f"{name:<8}{len(buf):>9}{mine:>14,.0f}{theirs:>20,.0f}{mine / theirs:>9.2f}")


if __name__ == "__main__":
    main()
