"""Opening a capture: path or file object in, a chunk-reading function and its format out.

Owns: format detection by magic bytes (pcap, pcapng, either gzipped), choosing the chunk reader
(`Gunzip` for gzip), and turning a read failure into an end of data that the caller reports as
an issue.
Does not own: record parsing (`pcap`, `pcapng`) or packet decoding (`decode`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

from .gunzip import Gunzip
from .model import CaptureError, CaptureFormat, KnownOtherFormat
from .read_meter import counted

Source = str | os.PathLike | BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1",  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4",  # microseconds, big-endian
    b"\x4d\x3c\xb2\xa1",  # nanoseconds, little-endian
    b"\xa1\xb2\x3c\x4d",  # nanoseconds, big-endian
}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
# Files a capture is often mistaken for or kept in, by their first bytes: what to say of them.
_OTHER_FORMATS = {
    b"\x28\xb5\x2f\xfd": "compressed with zstd: decompress it first (zstd -d)",
    b"\x04\x22\x4d\x18": "compressed with lz4: decompress it first (lz4 -d)",
    b"BZh": "compressed with bzip2: decompress it first (bunzip2)",
    b"\xfd7zX": "compressed with xz: decompress it first (xz -d)",
    b"PK\x03\x04": "a zip archive: unpack it first",
    b"\xa1\xb2\xcd\x34": "a modified (Kuznetzov) pcap, which we do not read: convert it with editcap -F pcap",
    b"\x34\xcd\xb2\xa1": "a modified (Kuznetzov) pcap, which we do not read: convert it with editcap -F pcap",
}

# Big enough that the per-read Python overhead vanishes, small enough to stay cache-friendly.
READ_SIZE = 1 << 20


class SafeRead:
    """A read(n) that ends the data instead of raising when the file cannot be read further.

    The failure is kept in `failure` as (kind, detail), as `Gunzip` keeps its own, so the reader
    can report it after the last good packet.
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
        except OSError as e:
            self.failure = ("read_error", f"reading the file failed: {e}")
        return b""


def read_more(read: Callable[[int], bytes], rest, want: int, chunk: int) -> bytes:
    """`rest` followed by at least `want` more bytes, or by all the data still has, read `chunk`
    bytes at a time: a length claimed by a broken header costs no more memory than the bytes that
    are really there. Nothing was left when the result is no longer than `rest`."""
    parts = [rest]
    got = 0
    while got < want:
        more = read(chunk)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _read_exactly(read: Callable[[int], bytes], n: int) -> bytes:
    out = b""
    while len(out) < n:
        more = read(n - len(out))
        if not more:
            break
        out += more
    return out


def container_of(head: bytes) -> str:
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    if head[:4] == PCAPNG_MAGIC:
        return "pcapng"
    for magic, what in _OTHER_FORMATS.items():
        if head.startswith(magic):
            raise KnownOtherFormat(what)
    raise CaptureError(f"not a pcap or pcapng capture (first bytes {head[:4].hex() or 'none'})")


@contextlib.contextmanager
def open_capture(source: Source) -> Iterator[tuple[SafeRead | Gunzip, CaptureFormat, bytes]]:
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
        raw_read = counted(getattr(f, "read1", f.read))
        head = _read_exactly(raw_read, 4)
        gzipped = head[:2] == GZIP_MAGIC
        read: Gunzip | SafeRead
        if gzipped:
            read = Gunzip(raw_read, head)
            head = _read_exactly(read, 4)
            if read.failure is not None and len(head) < 4:
                raise CaptureError(f"cannot decompress capture: {read.failure[1]}")
        else:
            read = SafeRead(raw_read)
        yield read, CaptureFormat(container_of(head), gzipped), head


def detect_format(source: Source) -> CaptureFormat:
    """Say what kind of capture `source` is, from its magic bytes (never its name).

    A seekable file object is put back where it was; a non-seekable one is consumed.
    """
    stream = None if isinstance(source, (str, os.PathLike)) else source
    pos = stream.tell() if stream is not None and getattr(stream, "seekable", lambda: False)() else None
    try:
        with open_capture(source) as (_, fmt, _):
            return fmt
    finally:
        if stream is not None and pos is not None:
            stream.seek(pos)
