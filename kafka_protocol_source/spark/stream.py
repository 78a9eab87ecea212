"""``spark.readStream.format("kafka-wire")``: follow a capture directory as new files land.

Each micro-batch reads the files that appeared since the last one, whole, through the same
partition reader as batch reads. The offset is the newest modification time consumed plus the
files consumed at exactly that time, so files are read once, in order of arrival, across
restarts. A file counts as complete once it has not changed for ``minFileAge`` seconds (capture
tools write for a while); ``maxFilesPerTrigger`` bounds a micro-batch. As with Spark's file
source, a file that arrives later with an older modification time than what was consumed is
not picked up.
"""

from __future__ import annotations

import os
import time

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles
from pyspark.sql.types import StructType

from .options import OptionError, ReadOptions
from .partition_reader import PartitionReader, plan_partitions
from .paths import expand

START = {"mtime_ns": -1, "paths": []}


class KafkaWireStreamReader(DataSourceStreamReader):
    def __init__(self, options: ReadOptions, schema: StructType, raw_options: dict):
        self.options = options
        self.schema = schema
        opts = {k.lower(): v for k, v in raw_options.items()}
        try:
            self.max_files = int(opts["maxfilespertrigger"]) if "maxfilespertrigger" in opts else None
            self.min_age_ns = int(float(opts.get("minfileage", "2")) * 1e9)
        except ValueError as e:
            raise OptionError(f"maxFilesPerTrigger must be an integer and minFileAge a number of seconds: {e}") from e

    def initialOffset(self) -> dict:
        return dict(START)

    def getDefaultReadLimit(self):
        return ReadMaxFiles(self.max_files) if self.max_files else ReadAllAvailable()

    def latestOffset(self, start: dict, limit=None) -> dict:
        new = self._new_files(start)
        if isinstance(limit, ReadMaxFiles):
            new = new[: limit.max_files]
        if not new:
            return start
        last = new[-1][0]
        at_last = [p for m, p in new if m == last]
        if last == start["mtime_ns"]:
            at_last = start["paths"] + at_last
        return {"mtime_ns": last, "paths": sorted(at_last)}

    def partitions(self, start: dict, end: dict):
        files = [p for m, p in self._new_files(start)
                 if m < end["mtime_ns"] or (m == end["mtime_ns"] and p in end["paths"])]
        return plan_partitions(files, self.options.split_size)

    def read(self, partition):
        yield from PartitionReader(self.options, self.schema, self.options.apis).read(partition)

    def _new_files(self, start: dict) -> list[tuple[int, str]]:
        try:
            files = expand(self.options.paths, self.options.recursive, self.options.glob_filter)
        except FileNotFoundError:
            return []  # the directory may not exist yet
        settled = time.time_ns() - self.min_age_ns
        seen = set(start["paths"])
        out = []
        for path in files:
            m = _mtime(path)
            if m is None or m > settled:
                continue
            if m > start["mtime_ns"] or (m == start["mtime_ns"] and path not in seen):
                out.append((m, path))
        return sorted(out)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
