"""Count the instructions of the read paths under callgrind: figures that do not move with the host.

On a shared machine CPU seconds of one piece of work vary by tens of percent from run to run;
instruction counts under ``valgrind --tool=callgrind`` vary by thousandths. So before/after
figures of a change to a hot path are best also given here. Each measurement runs in its own
child process under callgrind; the child first imports and warms up (every sample the benchmark
captures are built from read both ways, so parsers and VARIANT encoders exist for every message
version the capture holds, and the capture's split in two planned), and that "base" count is
taken off every other one:

* ``read_capture``: every exchange of the capture (the peer of goal 3's local[1] ratio);
* ``partition_reader``: the exchanges view's Arrow batches, as a Spark task builds them;
* ``index_pass``: what the planner does before a split read in two (``plan_partitions``, whose
  index pass gives each partition its own connections' records);
* ``split_0``, ``split_1``: the Arrow batches of each of those two partitions;
* ``unencoded_bodies``: ``partition_reader`` with every body's VARIANT encoding replaced by one
  constant cell (an empty object): the Spark task's work if encoding VARIANT cost nothing, the
  most any VARIANT encoder could give goal 3's local[1] ratio;
* ``without_bodies``: ``partition_reader`` with a user schema that leaves ``request`` and
  ``response`` out, as ``kafka-wire report`` reads the exchanges (the README's figure for it).

Printed: instructions of each; read_capture over partition_reader (goal 3's local[1] ratio,
counted instead of timed); partition_reader over index_pass plus the larger half (the most a split
in two on two cores can give over one task, the JVM's work left out: goal 3's local[2] ratio); and
the work of the split over the work of one task (goal 4); read_capture over unencoded_bodies;
and without_bodies over partition_reader. Needs valgrind (``apt-get install valgrind``); about a
minute per measurement on the default 3 MB capture, children run side by side, one per core.

    python benchmarks/bench_instructions.py [--capture PATH] [--size-mb 3]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MEASURES = (
    "base",
    "read_capture",
    "partition_reader",
    "index_pass",
    "split_0",
    "split_1",
    "unencoded_bodies",
    "without_bodies",
)
_EMPTY_OBJECT = (bytes((2, 0, 0)), bytes((1, 0, 0)))  # a VARIANT object of no fields, and empty metadata


def child(what: str, path: str) -> None:
    """Runs under callgrind: the warm-up, then ``what`` over ``path``."""
    from pyspark.sql.types import StructType

    from benchmarks.bench_spark import SAMPLES, SEEDS
    from kafka_protocol_source.pipeline import read_capture
    from kafka_protocol_source.spark.options import ReadOptions
    from kafka_protocol_source.spark.partition_reader import CapturePartition, PartitionReader, plan_partitions
    from kafka_protocol_source.spark.source import default_schema
    from kafka_protocol_source.views.exchanges import BODY_COLUMNS

    options = ReadOptions.parse({"path": path})
    schema = default_schema(options)

    def batches(partition: CapturePartition, schema: StructType = schema) -> int:
        return sum(b.num_rows for b in PartitionReader(options, schema).read(partition))

    def plan() -> list[CapturePartition]:
        return plan_partitions([path], -(-os.path.getsize(path) // 2), index=True)

    for seed in SEEDS:
        sum(1 for _ in read_capture(str(SAMPLES / seed)))
        batches(CapturePartition(str(SAMPLES / seed)))
    halves = plan()
    if what == "read_capture":
        sum(1 for _ in read_capture(path))
    elif what == "partition_reader":
        batches(CapturePartition(path))
    elif what == "index_pass":
        plan()
    elif what.startswith("split_"):
        batches(halves[int(what[-1])])
    elif what == "unencoded_bodies":
        from kafka_protocol_source.views.variant import VariantEncoder

        VariantEncoder.encode = lambda self, value, body=None: _EMPTY_OBJECT  # type: ignore[method-assign]
        batches(CapturePartition(path))
    elif what == "without_bodies":
        batches(CapturePartition(path), StructType([f for f in schema.fields if f.name not in BODY_COLUMNS]))


def count(what: str, path: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                __file__,
                "--child",
                what,
                "--capture",
                path,
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run of {what} failed:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", type=Path, help="a pcap to count on (default: one built like bench_spark's)")
    ap.add_argument("--size-mb", type=int, default=3)
    ap.add_argument("--child", choices=MEASURES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, str(args.capture))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    path = args.capture
    if path is None:
        from benchmarks.bench_spark import build

        path = Path(f"/tmp/kafka_wire_bench_instructions_{args.size_mb}mb.pcap")
        if not path.exists():
            build(path, args.size_mb)
    print(f"capture: {path} ({os.path.getsize(path) / 2**20:.1f} MB); instructions under callgrind, base taken off")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = dict(zip(MEASURES, pool.map(partial(count, path=str(path)), MEASURES), strict=True))
    base = counts.pop("base")
    got = {what: total - base for what, total in counts.items()}
    for what, total in got.items():
        print(f"  {what:18} {total / 1e9:8.3f} G")
    rc, pr, index = got["read_capture"], got["partition_reader"], got["index_pass"]
    halves = (got["split_0"], got["split_1"])
    print(f"read_capture / partition_reader: {rc / pr:.3f} (goal 3's local[1] ratio, counted; goal >= 0.8)")
    print(
        f"partition_reader / (index_pass + larger half): {pr / (index + max(halves)):.3f}"
        " (goal 3's local[2] split ratio at best, JVM aside; goal >= 1.8)"
    )
    print(f"(index_pass + both halves) / partition_reader: {(index + sum(halves)) / pr:.3f} (goal 4: <= 1.2)")
    print(
        f"read_capture / unencoded_bodies: {rc / got['unencoded_bodies']:.3f} (goal 3's local[1] ratio, counted,"
        " if encoding VARIANT cost nothing)"
    )
    print(f"without_bodies / partition_reader: {got['without_bodies'] / pr:.3f} (a schema without the bodies)")


if __name__ == "__main__":
    main()
