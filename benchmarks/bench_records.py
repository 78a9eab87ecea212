"""Benchmark of the records stage: records/s on 1000-record v2 batches, per codec.

Builds each batch once with kafka-python's DefaultRecordBatchBuilder and times our
`decode_records` next to kafka-python's own DefaultRecordBatch reader on the same bytes in
the same run, so the ratio is meaningful on any machine. Both sides materialise every
record's offset, timestamp, key, value and headers, and hold them all. The two sides take
turns, one timing window each, and each window counts the process's CPU time: on a shared,
busy host the wall clock mostly measures the neighbours, and a side timed only before or
after the other would meet different neighbours. Run:
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
    # Both sides hold a batch's records at once, as decode_records returns them and as
    # kafka-python's Fetcher collects them into a list for poll(); dropping each record as
    # soon as it is read would spare kafka-python the garbage collector's work on them.
    records = []
    # DefaultRecordBatch copies what it is given into a bytearray itself; no copy of ours on top.
    for record in DefaultRecordBatch(buf):
        _ = record.offset, record.timestamp, record.key, record.value, record.headers  # what a reader touches
        records.append(record)
    return len(records)


def seconds_per_call(decode, buf: bytes) -> float:
    """CPU seconds per call over a window of about 0.2 s."""
    loops = 0
    start = time.process_time()
    while True:
        decode(buf)
        loops += 1
        elapsed = time.process_time() - start
        if elapsed > 0.2:
            return elapsed / loops


def best_rates(sides, buf: bytes, count: int, repeat: int) -> list[float]:
    """Records/s of each side, the best of `repeat` windows, the sides taking turns."""
    for decode in sides:
        assert decode(buf) == count
    best = [float("inf")] * len(sides)
    for _ in range(repeat):
        for i, decode in enumerate(sides):
            best[i] = min(best[i], seconds_per_call(decode, buf))
    return [count / seconds for seconds in best]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"{'codec':<8}{'bytes':>9}{'ours rec/s':>14}{'kafka-python rec/s':>20}{'ours/kp':>9}")
    for name, codec in CODECS.items():
        buf = build_batch(codec, args.records)
        mine, theirs = best_rates((ours, kafka_python), buf, args.records, args.repeat)
        print(f"{name:<8}{len(buf):>9}{mine:>14,.0f}{theirs:>20,.0f}{mine / theirs:>9.2f}")


if __name__ == "__main__":
    main()
