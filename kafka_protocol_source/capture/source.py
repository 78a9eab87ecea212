"""Opening a capture: path or file object in, a chunk-reading function and its format out.

Owns: format detection by magic bytes (pcap, pcapng, either gzipped), transparent gunzip, and
turning a decompression failure into an end of data that the caller reports as an issue.
Does not own: record parsing (`pcap`, `pcapng`) or packet decoding (`decode`).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO, Union

from .model import CaptureError, CaptureFormat

Source = Union[str, os.PathLike, BinaryIO]

GZIP_MAGIC = b"\x1f\x8b"
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1",  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4",  # microseconds, big-endian
    b"\x4d\x3c\xb2\xa1",  # nanoseconds, little-endian
    b"\xa1\xb2\x3c\x4d",  # nanoseconds, big-endian
}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"

# Big enough that the per-read Python overhead vanishes, small enough to stay cache-friendly.
READ_SIZE = 1 << 20


class SafeRead:
    """A read(n) that ends the data instead of raising when a gzip stream is cut or corrupt.

    The failure is kept in `failure` as (kind, detail) so the reader can report it after the last
    good packet, which is what a person wants from a capture that was cut while being written.
    """

    __slots__ = ("_read", "failure")

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self.failure: tuple[str, str] | None = None

    def __call__(self, n: int) -> bytes:
        if self.failure is not None:
            return b""
        try:
            return self._read(n)
        except EOFError as e:
            self.failure = ("truncated_file", f"compressed stream ends early: {e}")
        except (zlib.error, gzip.BadGzipFile) as e:
            self.failure = ("corrupt_file", f"bad compressed data: {e}")
        return b""


class _Prefixed(io.RawIOBase):
    """A non-seekable stream with bytes we already consumed put back in front."""

    def __init__(self, head: bytes, f: BinaryIO) -> None:
        self._head = head
        self._f = f

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._f.read(len(b))
        b[: len(data)] = data
        return len(data)


def _read_exactly(read: Callable[[int], bytes], n: int) -> bytes:
    out = b""
    while len(out) < n:
        more = read(n - len(out))
        if not more:
            break
        out += more
    return out


def _container_of(head: bytes) -> str:
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    if head[:4] == PCAPNG_MAGIC:
        return "pcapng"
    raise CaptureError(f"not a pcap or pcapng capture (first bytes {head[:4].hex() or 'none'})")


@contextlib.contextmanager
def open_capture(source: Source) -> Iterator[tuple[SafeRead, CaptureFormat, bytes]]:
    """Open `source` and yield (read, format, head).

    `head` holds the first bytes of the (decompressed) capture, already consumed from `read`;
    record readers start from it. Raises CaptureError when the magic is not a known capture.
    """
    with contextlib.ExitStack() as stack:
        if isinstance(source, (str, os.PathLike)):
            try:
                f = stack.enter_context(open(source, "rb", buffering=READ_SIZE))
            except OSError as e:
                raise CaptureError(f"cannot open capture {os.fspath(source)!r}: {e}") from e
        else:
            f = source
        head = _read_exactly(f.read, 4)
        gzipped = head[:2] == GZIP_MAGIC
        if gzipped:
            gz = stack.enter_context(gzip.GzipFile(fileobj=io.BufferedReader(_Prefixed(head, f)), mode="rb"))
            read = SafeRead(gz.read1)
            head = _read_exactly(read, 4)
            if read.failure is not None and len(head) < 4:
                raise CaptureError(f"cannot decompress capture: {read.failure[1]}")
        else:
            read = SafeRead(getattr(f, "read1", f.read))
        yield read, CaptureFormat(_container_of(head), gzipped), head


def detect_format(source: Source) -> CaptureFormat:
    """Say what kind of capture `source` is, from its magic bytes (never its name).

    A seekable file object is put back where it was; a non-seekable one is consumed.
    """
    pos = None
    if not isinstance(source, (str, os.PathLike)) and getattr(source, "seekable", lambda: False)():
        pos = source.tell()
    try:
        with open_capture(source) as (_, fmt, _):
            return fmt
    finally:
        if pos is not None:
            source.seek(pos)
