"""Byte ranges of a gzipped capture's decompressed data, read front to back.

Owns: ``GunzipRanges``, ``pread(n, offset)`` over the decompressed bytes of a gzip file, for
readers that move forward (the index pass; a reader of some records' runs): bytes between two
reads are decompressed and dropped, never kept; a read behind what is held starts again from the
beginning of the file. A gzip stream cannot be entered in the middle, so every reader of a split
gzipped capture decompresses it whole (zlib, in C) but parses only its own records. Also says
where the decompressed data ends (``size``) and why it ended early (``failure``, as ``Gunzip``
gives it). Does not own decompressing (``gunzip``) or what the bytes mean.
"""

from __future__ import annotations

import os
from io import BufferedReader, FileIO

from .gunzip import Gunzip
from .read_meter import counted
from .source import READ_SIZE

PIECE = 1 << 20  # decompressed at a time
_PAST_ANY_END = 1 << 62


class GunzipRanges:
    __slots__ = ("_base", "_buf", "_ended", "_file", "_gunzip", "_path")

    def __init__(self, path: str | os.PathLike) -> None:
        self._path = path
        self._file: BufferedReader | None = None
        self._restart()

    def _restart(self) -> None:
        self.close()
        f = self._file = BufferedReader(FileIO(self._path), READ_SIZE)
        self._gunzip = Gunzip(counted(f.read1))
        self._buf, self._base, self._ended = b"", 0, False

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def failure(self) -> tuple[str, str] | None:
        """Why the decompressed data ended early, once a read has come to its end."""
        return self._gunzip.failure

    def pread(self, n: int, offset: int) -> bytes:
        """Up to ``n`` decompressed bytes from ``offset`` (fewer at the end of the data)."""
        if offset < self._base:
            self._restart()
        end = offset + n
        if self._base + len(self._buf) < end and not self._ended:
            self._fill(offset, end)
        start = offset - self._base
        return self._buf[start : start + n] if start >= 0 else b""

    def _fill(self, offset: int, end: int) -> None:
        """Hold the decompressed bytes from ``offset`` to at least ``end`` (or the data's end)."""
        have = self._base + len(self._buf)
        if offset < have:
            parts, base = [self._buf[offset - self._base :]], offset
        else:
            parts, base = [], have
        while have < end:
            more = self._gunzip(PIECE)
            if not more:
                self._ended = True
                break
            if not parts and have + len(more) <= offset:  # wholly before offset: dropped
                have += len(more)
                base = have
                continue
            if not parts and have < offset:
                more = more[offset - have :]
                have = base = offset
            parts.append(more)
            have += len(more)
        self._buf, self._base = b"".join(parts), base

    def size(self) -> int:
        """How many bytes the decompressed data has: read to its end (then ``failure`` is known)."""
        if not self._ended:
            self._fill(_PAST_ANY_END, _PAST_ANY_END)  # every byte dropped on the way
        return self._base + len(self._buf)
