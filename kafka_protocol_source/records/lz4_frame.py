"""LZ4 frame decoding as Kafka writes it, bounded in output size.

Owns the LZ4 frame format (magic, FLG/BD, optional content size, header checksum, blocks,
end mark, optional content checksum) on top of cramjam's block primitive. Kafka's own
KafkaLZ4BlockInputStream does the same, and we follow it rather than a strict frame decoder
in two ways:
- the header checksum byte is never checked: brokers before 0.10 and kafka-python computed
  it over the magic as well (KAFKA-3160), and messages with magic 0 still carry that value;
- block and content checksums are skipped (the batch CRC already guards the bytes).
Frames with linked blocks (not written by Kafka clients, allowed by the format) go to
cramjam's frame decoder after a bound check. Does not know about batches or codec ids.
"""

import struct
import threading

import cramjam

from .errors import RecordsError

_MAGIC = 0x184D2204
_U32 = struct.Struct("<I")
_BLOCK_MAX_SIZE = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_UNCOMPRESSED_BIT = 0x80000000
# Each block is decompressed into a scratch buffer of the frame's block size (up to 4 MiB) and
# copied out at once, so one buffer per thread serves every frame.
_scratch = threading.local()


def _scratch_of(size: int) -> tuple[bytearray, memoryview]:
    held = getattr(_scratch, "held", None)
    if held is None or len(held[0]) < size:
        buffer = bytearray(size)
        held = _scratch.held = (buffer, memoryview(buffer))
    return held


def decompress_lz4_frames(data: bytes, limit: int) -> bytes:
    """Decompress one or more concatenated LZ4 frames, failing once output passes `limit`."""
    out = bytearray()
    pos = _decode_frame(data, 0, limit, out)
    # Kafka reads a single frame; further frames are only taken when they really are frames.
    while len(data) - pos >= 4 and _U32.unpack_from(data, pos)[0] == _MAGIC:
        pos = _decode_frame(data, pos, limit, out)
    return bytes(out)


def _read_header(data: bytes, pos: int) -> tuple[int, int, int, int]:
    """Return (position of first block, FLG, block max size, header start) of a frame."""
    n = len(data)
    if n - pos < 7:
        raise RecordsError("lz4 frame header truncated")
    if _U32.unpack_from(data, pos)[0] != _MAGIC:
        raise RecordsError("not an lz4 frame (bad magic)")
    flg, bd = data[pos + 4], data[pos + 5]
    if flg >> 6 != 1:
        raise RecordsError(f"unsupported lz4 frame version {flg >> 6}")
    if flg & 0x01:
        raise RecordsError("lz4 frame with a dictionary id is not supported")
    block_max = _BLOCK_MAX_SIZE.get((bd >> 4) & 0x07)
    if block_max is None:
        raise RecordsError(f"invalid lz4 block max size code {(bd >> 4) & 0x07}")
    checksum_at = pos + 6
    if flg & 0x08:
        if n - checksum_at < 9:
            raise RecordsError("lz4 frame header truncated")
        checksum_at += 8
    if checksum_at >= n:
        raise RecordsError("lz4 frame header truncated")
    return checksum_at + 1, flg, block_max, pos


def _decode_frame(data: bytes, pos: int, limit: int, out: bytearray) -> int:
    pos, flg, block_max, frame_start = _read_header(data, pos)
    if not flg & 0x20:
        return _decode_linked_frame(data, frame_start, limit, out)
    block_checksum = 4 if flg & 0x10 else 0
    view = memoryview(data)
    scratch = None  # frames of stored blocks only need none
    while True:
        pos, size, stored = _block(data, pos, block_checksum, block_max)
        if size == 0:
            break
        block = view[pos : pos + size]
        if stored:
            out += block
        else:
            if scratch is None:
                scratch, scratch_view = _scratch_of(block_max)
            try:
                # Without output_len cramjam guesses whether the block starts with a size prefix,
                # and a block whose first bytes read as a small little-endian int is misread.
                written = cramjam.lz4.decompress_block_into(block, scratch, output_len=block_max)
            except cramjam.DecompressionError as e:
                raise RecordsError(f"lz4 block corrupt: {e}") from e
            out += scratch_view[:written]
        if len(out) > limit:
            raise RecordsError(f"lz4 output exceeds {limit} bytes")
        pos += size + block_checksum
    pos = _after_content_checksum(data, pos, flg)
    return pos


def _block(data: bytes, pos: int, block_checksum: int, block_max: int | None = None) -> tuple[int, int, bool]:
    """The block whose size word is at ``pos``: (where its bytes start, size, stored uncompressed).
    Size 0 is the end mark. The block and its checksum must all be there."""
    if len(data) - pos < 4:
        raise RecordsError("lz4 frame truncated before end mark")
    size = _U32.unpack_from(data, pos)[0]
    pos += 4
    if size == 0:
        return pos, 0, False
    stored = bool(size & _UNCOMPRESSED_BIT)
    size &= ~_UNCOMPRESSED_BIT
    if block_max is not None and size > block_max:
        raise RecordsError(f"lz4 block of {size} bytes exceeds frame block size {block_max}")
    if len(data) - pos < size + block_checksum:
        raise RecordsError("lz4 block truncated")
    return pos, size, stored


def _after_content_checksum(data: bytes, pos: int, flg: int) -> int:
    if flg & 0x04:
        if len(data) - pos < 4:
            raise RecordsError("lz4 content checksum truncated")
        pos += 4
    return pos


def _decode_linked_frame(data: bytes, frame_start: int, limit: int, out: bytearray) -> int:
    """Linked blocks need the previous 64 KiB as dictionary; cramjam's frame decoder has it."""
    pos, flg, block_max, _ = _read_header(data, frame_start)
    block_checksum = 4 if flg & 0x10 else 0
    bound = 0
    # Walk the block headers first so the decoder only runs when its output is provably
    # below the limit: cramjam cannot stop part way.
    while True:
        pos, size, stored = _block(data, pos, block_checksum)
        if size == 0:
            break
        bound += size if stored else block_max
        pos += size + block_checksum
    pos = _after_content_checksum(data, pos, flg)
    if len(out) + bound > limit:
        raise RecordsError(f"lz4 output may exceed {limit} bytes")
    header_end = frame_start + 6 + (8 if flg & 0x08 else 0)
    frame = bytearray(data[frame_start:pos])
    # Rewrite the header checksum so old-Kafka frames pass cramjam's strict check.
    frame[header_end - frame_start] = (xxh32(data[frame_start + 4 : header_end]) >> 8) & 0xFF
    try:
        out += cramjam.lz4.decompress(bytes(frame))
    except cramjam.DecompressionError as e:
        raise RecordsError(f"lz4 frame corrupt: {e}") from e
    return pos


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, used for the few bytes of an LZ4 frame header checksum."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos : pos + 4], "little")
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[pos : pos + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h = ((h ^ (h >> 15)) * _P2) & _M32
    h = ((h ^ (h >> 13)) * _P3) & _M32
    return h ^ (h >> 16)
