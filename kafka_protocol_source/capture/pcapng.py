"""pcapng files: blocks out of a stream of bytes, read chunk by chunk.

Owns: section headers of either byte order, interface descriptions (link type, if_tsresol
including power-of-two resolutions, if_tsoffset), and the packet blocks EPB, SPB and the obsolete
PB. A time that an interface's scaling puts outside 1970..2200 is given as 0 (unknown) with one
`bad_timestamp` issue per interface: the packet's bytes still belong to their TCP stream. Unknown
blocks are skipped. Yields the same raw frame tuples as `pcap`
``(packet_index, file_offset, timestamp_ns, linktype, data, orig_len)`` or a `CaptureIssue`.
Does not look inside the frames.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from .model import LATEST_TIMESTAMP_NS, CaptureIssue
from .source import READ_SIZE, read_more

SHB = 0x0A0D0D0A
IDB = 0x00000001
PB = 0x00000002
SPB = 0x00000003
EPB = 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_TSRESOL = 9
_OPT_TSOFFSET = 14
MAX_BLOCK = 1 << 26
# Shortest possible block of each type we read: 12 bytes of framing and its fixed fields.
_SHORTEST = {IDB: 20, PB: 32, SPB: 16, EPB: 32}

_LE = {
    k: struct.Struct("<" + f)
    for k, f in (
        ("blk", "II"),
        ("epb", "IIIII"),
        ("pb", "HHIIII"),
        ("u32", "I"),
        ("idb", "HHI"),
        ("opt", "HH"),
        ("i64", "q"),
    )
}
_BE = {k: struct.Struct(">" + s.format[1:]) for k, s in _LE.items()}


class _Interface:
    """Link type and timestamp scaling of one IDB: ns = ticks * mul // div + offset_ns."""

    __slots__ = ("div", "linktype", "mul", "number", "offset_ns", "offset_s", "snaplen", "told_bad_time", "tsresol")

    def __init__(self, number: int, linktype: int, snaplen: int, tsresol: int, offset_s: int) -> None:
        self.number = number
        self.linktype = linktype
        self.snaplen = snaplen
        self.tsresol, self.offset_s = tsresol, offset_s
        exp = tsresol & 0x7F
        if tsresol & 0x80:
            self.mul, self.div = 1_000_000_000, 1 << exp
        elif exp <= 9:
            self.mul, self.div = 10 ** (9 - exp), 1
        else:
            self.mul, self.div = 1, 10 ** (exp - 9)
        self.offset_ns = offset_s * 1_000_000_000
        self.told_bad_time = False

    def bad_time(self, index: int, offset: int, ns: int) -> CaptureIssue | None:
        """The issue for a time out of range, the first time this interface has one."""
        if self.told_bad_time:
            return None
        self.told_bad_time = True
        return CaptureIssue(
            index,
            offset,
            "bad_timestamp",
            f"interface {self.number} (if_tsresol {self.tsresol:#x}, if_tsoffset {self.offset_s} s) "
            f"puts packets at {ns} ns since 1970, outside 1970..2200: their times are unknown",
        )


def _parse_idb(number: int, body: memoryview, st: dict) -> tuple[_Interface, str | None]:
    """The interface an IDB describes, and what was wrong with its options (read up to there)."""
    linktype, _reserved, snaplen = st["idb"].unpack_from(body, 0)
    tsresol, offset_s = 6, 0
    problem = None
    pos = 8
    while pos + 4 <= len(body):
        code, length = st["opt"].unpack_from(body, pos)
        pos += 4
        if code == 0:
            break
        if pos + length > len(body):
            problem = f"interface description option {code} claims {length} bytes, {len(body) - pos} left"
            break
        if code == _OPT_TSRESOL and length >= 1:
            tsresol = body[pos]
        elif code == _OPT_TSOFFSET and length >= 8:
            offset_s = st["i64"].unpack_from(body, pos)[0]
        pos += (length + 3) & ~3
    return _Interface(number, linktype, snaplen, tsresol, offset_s), problem


def read_pcapng_frames(read: Callable[[int], bytes], head: bytes) -> Iterator[tuple | CaptureIssue]:
    buf = head
    base = 0
    pos = 0
    size = len(buf)
    mv = memoryview(buf)
    st = _LE
    interfaces: list[_Interface] = []
    index = 0
    seen_shb = False
    while True:
        need = 12
        if size - pos >= 12:
            btype = st["u32"].unpack_from(buf, pos)[0]
            if btype == SHB:  # same bytes in both orders, so it can be recognised before the order is known
                bom = buf[pos + 8 : pos + 12]
                if bom == b"\x4d\x3c\x2b\x1a":
                    st = _LE
                elif bom == b"\x1a\x2b\x3c\x4d":
                    st = _BE
                else:
                    yield CaptureIssue(
                        index, base + pos, "corrupt_file", f"section header with byte-order magic {bytes(bom).hex()}"
                    )
                    return
                btype = SHB
            total = st["u32"].unpack_from(buf, pos + 4)[0]
            if total < 12 or total % 4 or total > MAX_BLOCK:
                if not seen_shb:
                    yield CaptureIssue(index, base + pos, "corrupt_file", f"section header claims length {total}")
                    return
                yield CaptureIssue(index, base + pos, "corrupt_file", f"block of type {btype:#x} claims length {total}")
                return
            need = total
            end = pos + total
            if end <= size:
                if total < _SHORTEST.get(btype, 12):
                    yield CaptureIssue(
                        index,
                        base + pos,
                        "corrupt_file",
                        f"block of type {btype:#x} is {total} bytes, too short for its fields",
                    )
                    index += btype != IDB
                elif btype == EPB:
                    iface_id, ts_hi, ts_lo, caplen, orig_len = st["epb"].unpack_from(buf, pos + 8)
                    if iface_id < len(interfaces) and 28 + caplen <= total:
                        itf = interfaces[iface_id]
                        ts = ((ts_hi << 32 | ts_lo) * itf.mul) // itf.div + itf.offset_ns
                        if not 0 <= ts < LATEST_TIMESTAMP_NS:
                            issue = itf.bad_time(index, base + pos, ts)
                            if issue is not None:
                                yield issue
                            ts = 0
                        yield (index, base + pos, ts, itf.linktype, mv[pos + 28 : pos + 28 + caplen], orig_len)
                    else:
                        yield CaptureIssue(
                            index,
                            base + pos,
                            "corrupt_file",
                            f"enhanced packet block for interface {iface_id} of {len(interfaces)} "
                            f"with {caplen} bytes in a {total}-byte block",
                        )
                    index += 1
                elif btype == SPB:
                    orig_len = st["u32"].unpack_from(buf, pos + 8)[0]
                    if interfaces:
                        itf = interfaces[0]
                        caplen = min(orig_len, total - 16, itf.snaplen or orig_len)
                        # SPB carries no timestamp: 0 says "unknown" rather than inventing one.
                        yield (index, base + pos, 0, itf.linktype, mv[pos + 12 : pos + 12 + caplen], orig_len)
                    else:
                        yield CaptureIssue(
                            index, base + pos, "corrupt_file", "simple packet block before any interface description"
                        )
                    index += 1
                elif btype == PB:
                    iface_id, _drops, ts_hi, ts_lo, caplen, orig_len = st["pb"].unpack_from(buf, pos + 8)
                    if iface_id < len(interfaces) and 28 + caplen <= total:
                        itf = interfaces[iface_id]
                        ts = ((ts_hi << 32 | ts_lo) * itf.mul) // itf.div + itf.offset_ns
                        if not 0 <= ts < LATEST_TIMESTAMP_NS:
                            issue = itf.bad_time(index, base + pos, ts)
                            if issue is not None:
                                yield issue
                            ts = 0
                        yield (index, base + pos, ts, itf.linktype, mv[pos + 28 : pos + 28 + caplen], orig_len)
                    else:
                        yield CaptureIssue(
                            index,
                            base + pos,
                            "corrupt_file",
                            f"packet block for interface {iface_id} of {len(interfaces)}",
                        )
                    index += 1
                elif btype == IDB:
                    interface, problem = _parse_idb(len(interfaces), mv[pos + 8 : end - 4], st)
                    interfaces.append(interface)
                    if problem is not None:
                        yield CaptureIssue(index, base + pos, "corrupt_file", problem)
                elif btype == SHB:
                    seen_shb = True
                    interfaces = []
                pos = end
                continue
        more = read_more(read, mv[pos:], need - (size - pos), READ_SIZE)
        if len(more) == size - pos:
            break
        buf = more
        base += pos
        pos = 0
        mv = memoryview(buf)
        size = len(buf)
    if size > pos:
        if size - pos >= 28 and need >= _SHORTEST[EPB] and st["u32"].unpack_from(buf, pos)[0] == EPB:
            # Hand over what survived of the last packet; the decoder marks the missing payload.
            iface_id, ts_hi, ts_lo, caplen, orig_len = st["epb"].unpack_from(buf, pos + 8)
            if iface_id < len(interfaces):
                itf = interfaces[iface_id]
                ts = ((ts_hi << 32 | ts_lo) * itf.mul) // itf.div + itf.offset_ns
                if not 0 <= ts < LATEST_TIMESTAMP_NS:
                    issue = itf.bad_time(index, base + pos, ts)
                    if issue is not None:
                        yield issue
                    ts = 0
                yield (index, base + pos, ts, itf.linktype, mv[pos + 28 : min(size, pos + 28 + caplen)], orig_len)
        yield CaptureIssue(index, base + pos, "truncated_file", f"last block cut: {size - pos} of {need} bytes present")
