"""Reading only some records of a capture file: its byte ranges ("runs"), read as one capture.

Owns: ``RecordRuns`` (the runs one reader takes: file offset, length, first packet index and
packet count of each, merged where they touch), ``open_runs`` (the runs of a file as one
stream of bytes, read with ``pread``, for the pcap and pcapng record readers, which do not know
they read a selection), and ``remap`` (their packets and issues back to the file's own packet
indices and offsets). The first run must hold the file's header (pcap) or section header
(pcapng). A gzipped file's runs are of its decompressed bytes (``gzip_ranges``). Does not own
deciding which records a reader takes (``index``).
"""

from __future__ import annotations

import contextlib
import os
from array import array
from collections.abc import Callable, Iterator
from functools import partial

from .gzip_ranges import GunzipRanges
from .model import CaptureError, CaptureFormat, CaptureIssue
from .read_meter import counted
from .source import GZIP_MAGIC, container_of

_END = float("inf")  # where the last run ends in the selection: it takes whatever follows


class RecordRuns:
    """Byte ranges of whole records of one file, in file order, flat as (offset, length,
    first packet index, packets) per run in an ``array`` (a partition carries it to a task)."""

    __slots__ = ("flat",)

    def __init__(self, flat=()) -> None:
        self.flat = array("q", flat)

    def add(self, offset: int, length: int, first_index: int, packets: int) -> None:
        flat = self.flat
        if flat and flat[-4] + flat[-3] == offset and flat[-2] + flat[-1] == first_index:
            flat[-3] += length
            flat[-1] += packets
        else:
            flat.extend((offset, length, first_index, packets))

    @property
    def byte_count(self) -> int:
        return sum(self.flat[1::4])

    def __reduce__(self):
        return RecordRuns, (self.flat,)


class RangeRead:
    """``read(n)`` over the runs of a file as one stream; like ``SafeRead``, a failing read (or a
    file shorter than when it was indexed) ends the data and is kept in ``failure``. Of a
    gzipped file (``gunzip``), the runs are of its decompressed bytes; once they are read, the
    rest is decompressed too, so that ``failure`` says whether the compressed data ended early."""

    __slots__ = ("_flat", "_gunzip", "_pos", "_pread", "_run", "failure")

    def __init__(self, pread: Callable[[int, int], bytes], runs: RecordRuns, gunzip: GunzipRanges | None = None):
        self._pread, self._flat, self._gunzip = pread, runs.flat, gunzip
        self._run, self._pos = 0, 0
        self.failure: tuple[str, str] | None = None

    def __call__(self, n: int) -> bytes:
        flat, parts, got = self._flat, [], 0
        while got < n and self._run * 4 < len(flat) and self.failure is None:
            offset, length = flat[self._run * 4], flat[self._run * 4 + 1]
            if length == 0:  # where the file ends (see index): nothing to read
                self._run += 1
                continue
            try:
                data = self._pread(min(length - self._pos, n - got), offset + self._pos)
            except OSError as e:
                self.failure = ("read_error", f"reading the file failed: {e}")
                break
            if not data:
                self.failure = (self._gunzip and self._gunzip.failure) or (
                    "read_error",
                    f"the file ends before byte {offset + length}: it shrank since it was indexed",
                )
                break
            parts.append(data)
            got += len(data)
            self._pos += len(data)
            if self._pos == length:
                self._run += 1
                self._pos = 0
        if not parts and self._run * 4 >= len(flat):
            self.finish()
        return b"".join(parts)

    def finish(self) -> None:
        """Of a gzipped file: decompress to the end of the compressed data (its reader stopped,
        or read all its runs), so that ``failure`` says whether that data ends early or goes bad."""
        if self._gunzip is not None and self.failure is None:
            self._gunzip.size()
            self.failure = self._gunzip.failure

    @property
    def packets_after(self) -> int | None:
        """Once every run is read: the index of the packet after the last run's."""
        flat = self._flat
        return flat[-2] + flat[-1] if flat and self._run * 4 >= len(flat) else None


@contextlib.contextmanager
def open_runs(path: str | os.PathLike, runs: RecordRuns) -> Iterator[tuple[RangeRead, CaptureFormat, bytes]]:
    """``open_capture`` for the runs of a capture file (of its decompressed bytes when gzipped):
    (read, format, head)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        gzipped = os.pread(fd, 2, 0) == GZIP_MAGIC
        gunzip = GunzipRanges(path) if gzipped else None
    except OSError as e:
        raise CaptureError(f"cannot open capture {os.fspath(path)!r}: {e}") from e
    try:
        read = RangeRead(gunzip.pread if gunzip is not None else counted(partial(os.pread, fd)), runs, gunzip)
        head = b""
        while len(head) < 4 and (more := read(4 - len(head))):
            head += more
        yield read, CaptureFormat(container_of(head), gzipped), head
    finally:
        os.close(fd)
        if gunzip is not None:
            gunzip.close()


def remap(items: Iterator, runs: RecordRuns) -> Iterator:
    """The frames and issues of a reader over ``runs``, at the file's own offsets and packet indices."""
    flat = runs.flat
    last = len(flat) // 4 - 1
    run, virtual_offset, virtual_index = 0, 0, 0  # where the current run starts in the selection

    def seek(offset: int) -> tuple[float, int, int]:
        """Moves to the run that holds selection ``offset``: where it ends in the selection (the
        last run takes whatever follows), and the shifts of its offsets and packet indices."""
        nonlocal run, virtual_offset, virtual_index
        while run < last and offset >= virtual_offset + flat[run * 4 + 1]:
            virtual_offset += flat[run * 4 + 1]
            virtual_index += flat[run * 4 + 3]
            run += 1
        end = virtual_offset + flat[run * 4 + 1] if run < last else _END
        return end, flat[run * 4] - virtual_offset, flat[run * 4 + 2] - virtual_index

    end, shift_offset, shift_index = seek(0) if flat else (_END, 0, 0)
    for item in items:
        if item.__class__ is tuple:  # a frame: checked against the run's end, shifted (most items)
            offset = item[1]
            if offset >= end:
                end, shift_offset, shift_index = seek(offset)
            yield (item[0] + shift_index, offset + shift_offset, item[2], item[3], item[4], item[5])
            continue
        offset = item.file_offset
        if offset >= end:  # an issue without a place in the file (-1) stays in the run it came in
            end, shift_offset, shift_index = seek(offset)
        yield CaptureIssue(
            item.packet_index + shift_index,
            offset + shift_offset if offset >= 0 else offset,
            item.kind,
            item.detail,
        )
