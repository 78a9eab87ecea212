"""Streaming gunzip that hands over every byte decompressed before a fault, in bounded pieces.

Owns: decompressing a gzip stream (one member or several, zero padding after the last allowed)
from a chunk-reading function, `GZIP_INPUT_PIECE` compressed bytes and at most `n` output bytes at
a time, and saying why it stopped early. `gzip.GzipFile` is not used because a `zlib.error`
loses all the output of the call that raised it (up to a whole read of good packets before the
corrupt byte), and because its buffered `read1(n)` allocates `n` bytes before reading anything.
Does not own format detection or what the bytes mean (see `source`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

GZIP_INPUT_PIECE = 1 << 16
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer (CRC-32, length) around deflate data


class Gunzip:
    """read(n) over a gzip stream: up to `n` decompressed bytes, b"" at the end or after a fault.

    Faults are kept in `failure` as (kind, detail): "truncated_file" when the compressed data
    ends inside a member, "corrupt_file" for bad data, a bad checksum or garbage after a member,
    "read_error" when the file itself could not be read.
    """

    __slots__ = ("_done", "_in_member", "_inflate", "_input", "_read", "failure")

    def __init__(self, read_compressed: Callable[[int], bytes], head: bytes = b"") -> None:
        self._read = read_compressed
        self._inflate = zlib.decompressobj(_GZIP_WBITS)
        self._input = head  # compressed bytes not yet handed to the decompressor
        self._in_member = False
        self._done = False
        self.failure: tuple[str, str] | None = None

    def __call__(self, n: int) -> bytes:
        while not self._done:
            inflate = self._inflate
            data = inflate.unconsumed_tail or self._input
            self._input = b""
            if not data:
                try:
                    data = self._read(GZIP_INPUT_PIECE)
                except OSError as e:
                    self._fail("read_error", f"reading the file failed: {e}")
                    break
                if not data and not self._in_member:
                    self._done = True
                    break
            if not self._in_member:
                data = data.lstrip(b"\0")  # zero padding after a member, as gzip(1) allows
                if not data:
                    continue
                self._in_member = True
            before = inflate.copy()
            try:
                # With no input left, this still gives what zlib holds back from a capped call.
                out = inflate.decompress(data, n)
            except zlib.error as e:
                self._fail("corrupt_file", f"bad compressed data: {e}")
                return _salvage(before, data)
            if inflate.eof:
                self._in_member = False
                self._input = inflate.unused_data
                self._inflate = zlib.decompressobj(_GZIP_WBITS)
            elif not data and not out:
                self._fail("truncated_file", "compressed stream ends early, inside a gzip member")
            if out:
                return out
        return b""

    def _fail(self, kind: str, detail: str) -> None:
        self.failure = (kind, detail)
        self._done = True


def _salvage(inflate, data: bytes) -> bytes:
    """What `data` decompresses to up to the byte where it goes bad (inflate: the state before it).

    Fed one byte at a time, zlib raises at the first bad byte and everything before it is kept.
    Only run once per file, on the piece that failed.
    """
    out = []
    for i in range(len(data)):
        try:
            out.append(inflate.decompress(data[i : i + 1]))
        except zlib.error:
            break
    return b"".join(out)
