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
_OPT_TSRESOL = 9
_OPT_TSOFFSET = 14
MAX_BLOCK = 1 << 26
_MAX_OPTIONS = 1 << 12  # bytes of options looked through for a cut packet block's closing length
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
        pos += _aligned(length)
    return _Interface(number, linktype, snaplen, tsresol, offset_s), problem


def _packet(itf: _Interface, ts_hi: int, ts_lo: int, index: int, offset: int, data, orig_len: int) -> tuple:
    """The frame tuple of one packet block, after a ``bad_timestamp`` issue if its time is the first bad one."""
    ts = ((ts_hi << 32 | ts_lo) * itf.mul) // itf.div + itf.offset_ns
    if 0 <= ts < LATEST_TIMESTAMP_NS:
        return ((index, offset, ts, itf.linktype, data, orig_len),)
    issue = itf.bad_time(index, offset, ts)
    frame = (index, offset, 0, itf.linktype, data, orig_len)
    return (frame,) if issue is None else (issue, frame)


_BlockResult = tuple[tuple, int]  # what a block yields, and how many packet indices it takes


class Section:
    """What the blocks of a section share: the byte order and the interfaces described so far."""

    def __init__(self) -> None:
        self._order(_LE)
        self.interfaces: list[_Interface] = []
        self.seen_shb = False
        self.readers: dict[int, Callable[[bytes, memoryview, int, int, int, int], _BlockResult]] = {
            EPB: self._enhanced_packet,
            SPB: self._simple_packet,
            PB: self._obsolete_packet,
            IDB: self._interface,
            SHB: self._section_header,
        }

    def _order(self, st: dict) -> None:
        self.st = st
        self.u32, self.epb = st["u32"], st["epb"]

    def head(self, buf: bytes, pos: int, index: int, offset: int) -> tuple[int, int, CaptureIssue | None]:
        """Type and length of the block at ``pos`` (a section header sets the byte order first)."""
        btype = self.u32.unpack_from(buf, pos)[0]
        if btype == SHB:  # same bytes in both orders, so it can be recognised before the order is known
            bom = buf[pos + 8 : pos + 12]
            if bom == b"\x4d\x3c\x2b\x1a":
                self._order(_LE)
            elif bom == b"\x1a\x2b\x3c\x4d":
                self._order(_BE)
            else:
                problem = f"section header with byte-order magic {bytes(bom).hex()}"
                return btype, 0, CaptureIssue(index, offset, "corrupt_file", problem)
        total = self.u32.unpack_from(buf, pos + 4)[0]
        if total < 12 or total % 4 or total > MAX_BLOCK:
            what = f"block of type {btype:#x}" if self.seen_shb else "section header"
            return btype, total, CaptureIssue(index, offset, "corrupt_file", f"{what} claims length {total}")
        return btype, total, None

    def block(
        self, btype: int, buf: bytes, mv: memoryview, pos: int, total: int, index: int, offset: int
    ) -> _BlockResult:
        """What one whole block yields; unknown blocks yield nothing."""
        if btype == EPB and total >= 32:  # nearly every block: no lookups
            return self._enhanced_packet(buf, mv, pos, total, index, offset)
        if total < _SHORTEST.get(btype, 12):
            problem = f"block of type {btype:#x} is {total} bytes, too short for its fields"
            return (CaptureIssue(index, offset, "corrupt_file", problem),), int(btype != IDB)
        reader = self.readers.get(btype)
        return reader(buf, mv, pos, total, index, offset) if reader is not None else ((), 0)

    def _enhanced_packet(
        self, buf: bytes, mv: memoryview, pos: int, total: int, index: int, offset: int
    ) -> _BlockResult:
        iface_id, ts_hi, ts_lo, caplen, orig_len = self.epb.unpack_from(buf, pos + 8)
        if iface_id >= len(self.interfaces) or 28 + caplen > total:
            problem = (
                f"enhanced packet block for interface {iface_id} of {len(self.interfaces)} "
                f"with {caplen} bytes in a {total}-byte block"
            )
            return (CaptureIssue(index, offset, "corrupt_file", problem),), 1
        itf = self.interfaces[iface_id]
        ts = ((ts_hi << 32 | ts_lo) * itf.mul) // itf.div + itf.offset_ns
        if 0 <= ts < LATEST_TIMESTAMP_NS:  # the common case, without _packet's call
            return ((index, offset, ts, itf.linktype, mv[pos + 28 : pos + 28 + caplen], orig_len),), 1
        return _packet(itf, ts_hi, ts_lo, index, offset, mv[pos + 28 : pos + 28 + caplen], orig_len), 1

    def _simple_packet(self, buf: bytes, mv: memoryview, pos: int, total: int, index: int, offset: int) -> _BlockResult:
        orig_len = self.st["u32"].unpack_from(buf, pos + 8)[0]
        if not self.interfaces:
            problem = "simple packet block before any interface description"
            return (CaptureIssue(index, offset, "corrupt_file", problem),), 1
        itf = self.interfaces[0]
        caplen = min(orig_len, total - 16, itf.snaplen or orig_len)
        # SPB carries no timestamp: 0 says "unknown" rather than inventing one.
        return ((index, offset, 0, itf.linktype, mv[pos + 12 : pos + 12 + caplen], orig_len),), 1

    def _obsolete_packet(
        self, buf: bytes, mv: memoryview, pos: int, total: int, index: int, offset: int
    ) -> _BlockResult:
        iface_id, _drops, ts_hi, ts_lo, caplen, orig_len = self.st["pb"].unpack_from(buf, pos + 8)
        if iface_id >= len(self.interfaces) or 28 + caplen > total:
            problem = f"packet block for interface {iface_id} of {len(self.interfaces)}"
            return (CaptureIssue(index, offset, "corrupt_file", problem),), 1
        data = mv[pos + 28 : pos + 28 + caplen]
        return _packet(self.interfaces[iface_id], ts_hi, ts_lo, index, offset, data, orig_len), 1

    def _interface(self, buf: bytes, mv: memoryview, pos: int, total: int, index: int, offset: int) -> _BlockResult:
        interface, problem = _parse_idb(len(self.interfaces), mv[pos + 8 : pos + total - 4], self.st)
        self.interfaces.append(interface)
        return ((CaptureIssue(index, offset, "corrupt_file", problem),) if problem is not None else ()), 0

    def _section_header(
        self, buf: bytes, mv: memoryview, pos: int, total: int, index: int, offset: int
    ) -> _BlockResult:
        self.seen_shb = True
        self.interfaces = []
        return (), 0

    def _closing_length(self, buf: bytes, pos: int, size: int) -> int | None:
        """For an enhanced packet block at ``pos``: the length its closing length field gives,
        found past its packet data (options may come first) where a block of that length ends;
        None when there is no such field in the bytes there are."""
        u32 = self.st["u32"].unpack_from
        if size - pos < 28 or u32(buf, pos)[0] != EPB:
            return None
        caplen = self.st["epb"].unpack_from(buf, pos + 8)[3]
        at = pos + 28 + _aligned(caplen)
        stop = min(size, at + _MAX_OPTIONS)
        while at + 4 <= stop:
            if u32(buf, at)[0] == at + 4 - pos:
                return at + 4 - pos
            at += 4
        return None

    def cut_block(
        self, buf: bytes, mv: memoryview, pos: int, size: int, need: int, index: int, offset: int
    ) -> Iterator:
        """The end of a file cut inside a block: what survived of a last packet, then the issue;
        or, for a packet block whose own closing length comes before the end, a corrupt length."""
        closing = self._closing_length(buf, pos, size)
        if closing is not None and closing != need:
            detail = f"block claims {need} bytes, but its closing length says {closing}"
            yield CaptureIssue(index, offset, "corrupt_file", detail)
            return
        if size - pos >= 28 and need >= _SHORTEST[EPB] and self.st["u32"].unpack_from(buf, pos)[0] == EPB:
            # Hand over what survived of the last packet; the decoder marks the missing payload.
            iface_id, ts_hi, ts_lo, caplen, orig_len = self.st["epb"].unpack_from(buf, pos + 8)
            if iface_id < len(self.interfaces):
                data = mv[pos + 28 : min(size, pos + 28 + caplen)]
                yield from _packet(self.interfaces[iface_id], ts_hi, ts_lo, index, offset, data, orig_len)
        yield CaptureIssue(index, offset, "truncated_file", f"last block cut: {size - pos} of {need} bytes present")


def _aligned(n: int) -> int:
    return (n + 3) & ~3


def read_pcapng_frames(read: Callable[[int], bytes], head: bytes) -> Iterator[tuple | CaptureIssue]:
    """Every packet of a pcapng stream (``head`` is what was already read of it), in file order."""
    section = Section()
    buf, base, pos = head, 0, 0
    size = len(buf)
    mv = memoryview(buf)
    index = 0
    while True:
        need = 12
        if size - pos >= 12:
            btype, total, issue = section.head(buf, pos, index, base + pos)
            if issue is not None:
                yield issue
                return
            need = total
            if pos + total <= size:
                items, taken = section.block(btype, buf, mv, pos, total, index, base + pos)
                yield from items
                index += taken
                pos += total
                continue
        more = read_more(read, mv[pos:], need - (size - pos), READ_SIZE)
        if len(more) == size - pos:
            break
        buf, base, pos = more, base + pos, 0
        mv = memoryview(buf)
        size = len(buf)
    if size > pos:
        yield from section.cut_block(buf, mv, pos, size, need, index, base + pos)
