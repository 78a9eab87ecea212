"""Classic libpcap files: records out of a stream of bytes, read chunk by chunk.

Owns: the 24-byte file header (both byte orders, micro- and nanosecond magic) and the 16-byte
record headers. Yields raw frames as plain tuples
``(packet_index, file_offset, timestamp_ns, linktype, data, orig_len)`` (tuples, not dataclasses,
because this is the per-packet hot path and the tuple never leaves the capture stage), or a
`CaptureIssue` for a file cut mid-record. Times need no range check: 32-bit seconds end in 2106.
Does not look inside the frames.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from .model import CaptureIssue
from .source import READ_SIZE, read_more

_FILE_HEADER_LEN = 24
# A record claiming more than this is garbage, not a packet: stop rather than buffer it. (Below
# it, only the bytes really there are ever buffered: see `read_more`.)
MAX_RECORD = 1 << 26
# A record claiming more than this, or than the file's snaplen when that is larger, is corrupt
# (libpcap refuses it too): what looks like a cut last record may be a bad length mid-file.
MAX_SNAPLEN = 1 << 18


def most_captured(snaplen: int) -> int:
    """The most captured bytes a record of a file with this snaplen can claim."""
    return min(max(snaplen, MAX_SNAPLEN), MAX_RECORD)


def read_pcap_frames(read: Callable[[int], bytes], head: bytes) -> Iterator[tuple | CaptureIssue]:
    buf = read_more(read, head, _FILE_HEADER_LEN - len(head), READ_SIZE)
    if len(buf) < _FILE_HEADER_LEN:
        yield CaptureIssue(0, 0, "truncated_file", f"file header cut short ({len(buf)} of {_FILE_HEADER_LEN} bytes)")
        return
    magic = buf[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    frac_to_ns = 1000 if magic in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4") else 1
    snaplen, network = struct.unpack_from(endian + "II", buf, 16)
    most = most_captured(snaplen)
    # The upper bits may carry FCS-length flags; the link type is the low 16 bits.
    linktype = network & 0xFFFF
    unpack_record = struct.Struct(endian + "IIII").unpack_from

    base = 0  # file offset of buf[0]
    pos = _FILE_HEADER_LEN
    index = 0
    mv = memoryview(buf)
    size = len(buf)
    while True:
        if size - pos >= 16:
            sec, frac, caplen, orig_len = unpack_record(buf, pos)
            end = pos + 16 + caplen
            if end <= size and caplen <= most:
                yield (
                    index,
                    base + pos,
                    sec * 1_000_000_000 + frac * frac_to_ns,
                    linktype,
                    mv[pos + 16 : end],
                    orig_len,
                )
                index += 1
                pos = end
                continue
            if caplen > most:
                detail = f"record claims {caplen} captured bytes, more than the file's snaplen ({snaplen}) allows"
                yield CaptureIssue(index, base + pos, "corrupt_file", detail)
                return
            want = end - size
        else:
            want = 16 - (size - pos)
        more = read_more(read, mv[pos:], want, READ_SIZE)
        if len(more) == size - pos:
            break
        buf = more
        base += pos
        pos = 0
        mv = memoryview(buf)
        size = len(buf)
    left = size - pos
    if left == 0:
        return
    if left >= 16:
        # Hand over what survived of the last packet; the decoder marks the missing payload.
        sec, frac, caplen, orig_len = unpack_record(buf, pos)
        yield (index, base + pos, sec * 1_000_000_000 + frac * frac_to_ns, linktype, mv[pos + 16 :], orig_len)
        detail = f"last record cut: {left - 16} of {caplen} captured bytes present"
    else:
        detail = f"last record header cut: {left} of 16 bytes present"
    yield CaptureIssue(index, base + pos, "truncated_file", detail)
