"""Decompression of batch payloads by Kafka codec id, never past a byte limit.

Owns the codec ids (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd) and their framings as Kafka
clients write them: gzip with possibly several members, snappy in xerial framing or raw,
Kafka's LZ4 frame (see lz4_frame), zstd frames without content size. Every decoder stops
once its output passes `limit` and checks claimed sizes against the input before it
allocates, so a small payload cannot expand into a large allocation. Does not know about
records or batches.
"""

import struct
import threading
import zlib

import cramjam
import zstandard

from .errors import RecordsError
from .lz4_frame import decompress_lz4_frames

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_GZIP_STEP = 1 << 20
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_I32 = struct.Struct(">i")
# A snappy element costs at least 2 bytes and yields at most 64, so a raw snappy stream can
# not legitimately claim more than this multiple of its size (the format's own bound is
# 32 + n + n/6 for the *compressed* size; this is the inverse, kept generous).
_SNAPPY_MAX_RATIO = 32
# A zstd block yields at most 128 KiB and costs at least 3 bytes of input; feeding input in
# steps sized from the room left keeps each call's output near the limit.
_ZSTD_BLOCK_MAX = 128 << 10
_ZSTD_MIN_STEP = 64
_ZSTD_MAX_WINDOW = 1 << 27
_zstd_contexts = threading.local()  # .dctx: this thread's decompressor


def decompress(codec_id: int, data: bytes, limit: int) -> bytes:
    """Return the decompressed bytes of `data`; raise RecordsError on any failure."""
    if codec_id == 1:
        return _gunzip(data, limit)
    if codec_id == 2:
        return _unsnappy(data, limit)
    if codec_id == 3:
        return decompress_lz4_frames(data, limit)
    if codec_id == 4:
        return _unzstd(data, limit)
    raise RecordsError(f"unsupported compression codec {codec_id}")


def _gunzip(data: bytes, limit: int) -> bytes:
    out = []
    total = 0
    rest = data
    # Java's GZIPInputStream reads concatenated members and ignores trailing non-gzip bytes.
    while rest[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(_GZIP_WBITS)
        pending = rest
        try:
            while not inflater.eof:
                # max_length 0 would mean unlimited, hence the +1 (it also detects overflow); at most
                # a step at a time, so a bomb stops within a step of the limit, not a limit past it.
                chunk = inflater.decompress(pending, min(limit - total + 1, _GZIP_STEP))
                pending = inflater.unconsumed_tail
                if not chunk and not pending:
                    raise RecordsError("gzip stream truncated")
                total += len(chunk)
                if total > limit:
                    raise RecordsError(f"gzip output exceeds {limit} bytes")
                out.append(chunk)
        except zlib.error as e:
            raise RecordsError(f"gzip stream corrupt: {e}") from e
        rest = inflater.unused_data
    if not out:
        raise RecordsError("not a gzip stream (bad magic)")
    return b"".join(out)


def _unsnappy(data: bytes, limit: int) -> bytes:
    if data[:8] != _XERIAL_MAGIC:
        return bytes(_snappy_raw(data, limit))
    n = len(data)
    if n < _XERIAL_HEADER_SIZE:
        raise RecordsError("xerial snappy header truncated")
    view = memoryview(data)
    pos = _XERIAL_HEADER_SIZE
    out = []
    total = 0
    while pos < n:
        if n - pos < 4:
            raise RecordsError("xerial snappy block size truncated")
        size = _I32.unpack_from(data, pos)[0]
        pos += 4
        if size < 0 or size > n - pos:
            raise RecordsError(f"xerial snappy block claims {size} bytes, {n - pos} left")
        block = _snappy_raw(view[pos : pos + size], limit - total)
        total += len(block)
        out.append(block)
        pos += size
    return b"".join(out)


def _snappy_raw(block, limit: int):
    try:
        claimed = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as e:
        raise RecordsError(f"snappy data corrupt: {e}") from e
    if claimed > limit:
        raise RecordsError(f"snappy output of {claimed} bytes exceeds {limit} bytes")
    if claimed > _SNAPPY_MAX_RATIO * len(block) + 32:
        raise RecordsError(f"snappy block of {len(block)} bytes claims impossible {claimed}")
    try:
        return cramjam.snappy.decompress_raw(block)
    except cramjam.DecompressionError as e:
        raise RecordsError(f"snappy data corrupt: {e}") from e


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor. Making one costs about 8 us, ten times what decompressing a
    small batch does; one is reused for any number of frames (each ``decompressobj`` starts
    afresh, after an error too), one frame at a time, hence one per thread."""
    try:
        return _zstd_contexts.dctx
    except AttributeError:
        dctx = _zstd_contexts.dctx = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
        return dctx


def _unzstd(data: bytes, limit: int) -> bytes:
    # cramjam's zstd cannot stop part way, so a bomb would be fully inflated first.
    dctx = _zstd_decompressor()
    view = memoryview(data)
    n = len(data)
    pos = 0
    out = []
    total = 0
    try:
        while pos < n:
            frame = dctx.decompressobj()
            while not frame.eof:
                if pos >= n:
                    raise RecordsError("zstd frame truncated")
                step = max(_ZSTD_MIN_STEP, 3 * ((limit - total) // _ZSTD_BLOCK_MAX))
                piece = view[pos : pos + step]
                chunk = frame.decompress(piece)
                pos += len(piece) - len(frame.unused_data)
                total += len(chunk)
                if total > limit:
                    raise RecordsError(f"zstd output exceeds {limit} bytes")
                out.append(chunk)
    except zstandard.ZstdError as e:
        raise RecordsError(f"zstd data corrupt: {e}") from e
    if not out:
        raise RecordsError("zstd payload is empty")
    return b"".join(out)
