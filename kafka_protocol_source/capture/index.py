"""The index pass: which reader takes each record of a capture file, from headers alone.

Several readers share one large capture by TCP connection. So that each reads only its own
packets (about the work of one reader in all, not one per reader), this pass reads each
record's header and the first bytes of its packet (the file is read ahead a megabyte at a time;
payloads are never looked at), finds the
packet's TCP endpoints with the same ``PacketDecoder`` the readers use, and hands each record to
the reader ``part_of`` names for those endpoints. Records that cannot be placed go to every
reader: the file header and pcapng section headers and interface descriptions (each reader needs
them), IP fragments (the endpoints are only known once reassembled), packets with broken
headers, and whatever follows a record the pass cannot read past (a corrupt or cut tail, which
the readers then report as they would have). Other non-TCP packets go to reader 0. Returns, per
reader, the ``RecordRuns`` of the file it reads.

A gzipped file is indexed in its decompressed bytes (``gzip_ranges``: decompressed once to learn
their length, then again as the pass reads); its readers decompress it whole and parse their runs.
Does not own the assignment itself (``part_of``, from the caller) or reading the runs (``runs``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from functools import partial

from .decode import PacketDecoder
from .gzip_ranges import GunzipRanges
from .model import CaptureError, CaptureIssue, TcpSegment
from .pcap import most_captured
from .pcapng import EPB, IDB, PB, SHB, SPB, Section
from .runs import RecordRuns
from .source import detect_format

# Bytes of each packet read: link, IP and TCP headers of nearly every packet (a packet whose
# headers go on is read whole).
HEAD = 192
CHUNK = 1 << 20  # the file is read ahead this much at a time
EVERY = -1  # a record every reader takes
# Ethernet type, IPv4 version and header length, total length, flags and offset, protocol, the
# addresses and ports (IPv4 source and destination, TCP source and destination), TCP data offset
_ETHERNET_IPV4_TCP = struct.Struct("!12xHBxH2xHxB2x12s8xB").unpack_from

Endpoints = tuple[str, int, str, int]
Pread = Callable[[int, int], bytes]  # (n, offset) -> up to n bytes of the (decompressed) file
# (file offset, length, first packet index, packets, frames and issues of its head or None or the
# reader it was placed with, cut)
_Record = tuple[int, int, int, int, tuple | int | None, bool]


def index_records(path: str | os.PathLike, count: int, part_of: Callable[[Endpoints], int]) -> list[RecordRuns] | None:
    """The runs each of ``count`` readers takes (``part_of`` maps a connection's endpoints, in
    canonical order, to a reader); None when the file cannot be read as a capture (then each
    reader reads it whole, and says what is wrong with it)."""
    try:
        fmt = detect_format(path)
        if fmt.gzipped:
            ranges = GunzipRanges(path)
            pread, close = ranges.pread, ranges.close
            size = ranges.size()
        else:
            fd = os.open(path, os.O_RDONLY)
            pread, close = partial(os.pread, fd), partial(os.close, fd)
            size = os.fstat(fd).st_size
    except (CaptureError, OSError):
        return None
    try:
        index = _PcapIndex if fmt.container == "pcap" else _PcapngIndex
        return _index(index(pread, size), count, part_of)
    except OSError:
        return None
    finally:
        close()


def _index(records: _PcapIndex | _PcapngIndex, count: int, part_of: Callable[[Endpoints], int]) -> list[RecordRuns]:
    runs = [RecordRuns() for _ in range(count)]
    placer = _Placer(part_of)
    offset = length = first = packets = 0
    for offset, length, first, packets, items, cut in records.records(placer.by_key):
        if isinstance(items, int):
            runs[items % count].add(offset, length, first, packets)
            continue
        reader = EVERY if items is None else placer.place(items)
        if reader is None and cut:  # the headers go on past what was read: read the whole record
            reader = placer.place(records.whole(offset, length, first))
        if reader is None:
            reader = EVERY
        if reader == EVERY:
            for r in runs:
                r.add(offset, length, first, packets)
        else:
            runs[reader % count].add(offset, length, first, packets)
    # Where the file ends (the last record's end), for every reader: one that says why the data
    # ended says after which packet.
    for r in runs:
        r.add(offset + length, 0, first + packets, 0)
    return runs


class _FragmentsSeen:
    """Stands in for the fragment reassembler: notes that a fragment went by, keeps nothing."""

    def __init__(self) -> None:
        self.seen = False

    def add(self, *_args) -> None:
        self.seen = True

    def poison(self, *_args) -> None:
        self.seen = True


class _Placer:
    def __init__(self, part_of: Callable[[Endpoints], int]) -> None:
        self.part_of = part_of
        self.by_key: dict[bytes, int] = {}  # the readers of plain packets' endpoints, as captured
        self.fragments = _FragmentsSeen()
        self.decode = PacketDecoder(self.fragments).decode  # type: ignore[arg-type]

    def place(self, items: tuple) -> int | None:
        """The reader of a record's frames; None when its headers were cut by the pass."""
        reader = 0
        for item in items:
            if item.__class__ is not tuple:
                return EVERY  # an issue of the block itself: every reader sees it as it would have
            key = plain_tcp_key(item[3], item[4])
            if key is not None and (known := self.by_key.get(key)) is not None:
                reader = known
                continue
            self.fragments.seen = False
            got = self.decode(*item)
            if got.__class__ is TcpSegment:
                a, b = (got.src_ip, got.src_port), (got.dst_ip, got.dst_port)
                reader = self.part_of(a + b if a <= b else b + a)
                if key is not None:
                    if len(self.by_key) >= 1 << 16:
                        self.by_key.clear()
                    # the other direction of the connection is the same connection: placed alike
                    self.by_key[key] = self.by_key[key[4:8] + key[:4] + key[10:] + key[8:10]] = reader
            elif self.fragments.seen:
                return EVERY
            elif isinstance(got, CaptureIssue):
                return None
        return reader


def plain_tcp_key(linktype: int, data, start: int = 0, size: int | None = None) -> bytes | None:
    """Addresses and ports (as captured) of an Ethernet IPv4 TCP packet without IP options or
    fragmentation whose headers are all there, for which ``PacketDecoder`` surely gives a segment
    of these endpoints; None for any other packet (which then takes the decoder's own path).
    The packet is ``data[start:start + size]`` (``size`` bytes of it captured; all of ``data``
    by default)."""
    if size is None:
        size = len(data) - start
    if linktype != 1 or size < 54:
        return None
    ethertype, version_ihl, total, fragment, protocol, key, doff = _ETHERNET_IPV4_TCP(data, start)
    if ethertype != 0x0800 or version_ihl != 0x45 or protocol != 6 or fragment & 0x3FFF:
        return None
    if total and total < 40:
        return None
    end = min(14 + total, size) if total else size
    doff >>= 4
    if doff < 5 or 34 + doff * 4 > end:
        return None
    return key


class _Window:
    """The file read ahead, ``CHUNK`` bytes (or a longer block) at a time: one read per window,
    not per record."""

    __slots__ = ("base", "buf", "mv", "pread", "size")

    def __init__(self, pread: Pread, size: int) -> None:
        self.pread, self.size = pread, size
        self.buf, self.mv, self.base = b"", memoryview(b""), 0

    def at(self, offset: int, need: int) -> int:
        """Where file ``offset`` is in ``buf``, with ``need`` bytes from there in it (read ahead
        first if they are not, as far as the file goes)."""
        pos = offset - self.base
        if len(self.buf) - pos < need and self.base + len(self.buf) < self.size:
            self.buf = self.pread(max(need, CHUNK), offset)
            self.mv, self.base, pos = memoryview(self.buf), offset, 0
        return pos


class _PcapIndex:
    _record = struct.Struct("<IIII")

    def __init__(self, pread: Pread, size: int) -> None:
        self.pread, self.size = pread, size
        self.linktype = 0

    def records(self, known: dict[bytes, int]) -> Iterator[_Record]:
        """The file's records; plain packets whose endpoints are in ``known`` come placed: the
        reader ``known`` gives instead of their frames, one record per run of consecutive
        packets with one reader (most packets of a capture: this loop is the index pass)."""
        file_head = self.pread(24, 0)
        if len(file_head) < 24:
            yield 0, self.size, 0, 0, None, False
            return
        endian = "<" if file_head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        self._record = struct.Struct(endian + "IIII")
        snaplen, network = struct.unpack_from(endian + "II", file_head, 16)
        self.linktype, most = network & 0xFFFF, most_captured(snaplen)
        yield 0, 24, 0, 0, None, False
        offset, index, size = 24, 0, self.size
        unpack, linktype, get = self._record.unpack_from, self.linktype, known.get
        ethernet, headers = linktype == 1, _ETHERNET_IPV4_TCP
        window = _Window(self.pread, size)
        buf, mv, base = window.buf, window.mv, window.base
        # Placed packets not yet handed over: from file offset run_at, the packets from run_first on.
        run_reader, run_at, run_first = None, 0, 0
        while offset + 16 <= size:
            pos = offset - base
            if len(buf) - pos < 16 + HEAD:
                pos = window.at(offset, 16 + HEAD)
                buf, mv, base = window.buf, window.mv, window.base
                if len(buf) - pos < 16:
                    break
            _, _, caplen, orig_len = unpack(buf, pos)
            end = offset + 16 + caplen
            head = caplen if caplen < HEAD else HEAD
            if caplen > most or end > size or len(buf) - pos < 16 + head:
                break
            reader = None
            if ethernet and head >= 54:  # plain_tcp_key, written out: this loop is every packet
                ethertype, version_ihl, total, fragment, protocol, key, doff = headers(buf, pos + 16)
                if ethertype == 0x0800 and version_ihl == 0x45 and protocol == 6 and not fragment & 0x3FFF:
                    end_ip = head if total == 0 or head < 14 + total else 14 + total
                    if (total == 0 or total >= 40) and doff >= 0x50 and 34 + (doff >> 4) * 4 <= end_ip:
                        reader = get(key)
            if reader is None or reader != run_reader:
                if run_reader is not None:
                    yield run_at, offset - run_at, run_first, index - run_first, run_reader, False
                run_reader, run_at, run_first = reader, offset, index
                if reader is None:
                    frame = (index, offset, 0, linktype, mv[pos + 16 : pos + 16 + head], orig_len)
                    yield offset, 16 + caplen, index, 1, (frame,), caplen > HEAD
            offset, index = end, index + 1
        if run_reader is not None:
            yield run_at, offset - run_at, run_first, index - run_first, run_reader, False
        if offset < size:
            yield offset, size - offset, index, 0, None, False

    def whole(self, offset: int, length: int, index: int) -> tuple:
        buf = self.pread(length, offset)
        orig_len = self._record.unpack_from(buf, 0)[3]
        return ((index, offset, 0, self.linktype, memoryview(buf)[16:], orig_len),)


class _PcapngIndex:
    def __init__(self, pread: Pread, size: int) -> None:
        self.pread, self.size = pread, size
        self.section = Section()

    def records(self, known: dict[bytes, int]) -> Iterator[_Record]:
        """The file's records (none comes placed: ``known`` is for the pcap reader's shortcut)."""
        offset, index, size, section = 0, 0, self.size, self.section
        window = _Window(self.pread, size)
        while offset + 12 <= size:
            pos = window.at(offset, 28 + HEAD)
            buf = window.buf
            if len(buf) - pos < 12:
                break
            btype, total, issue = section.head(buf, pos, index, offset)
            if issue is not None or offset + total > size:
                break
            structural = btype in (SHB, IDB)
            if pos + total > len(buf) and structural:  # read whole: later blocks depend on it
                pos = window.at(offset, total)
                buf = window.buf
            mv = window.mv
            items, taken = section.block(btype, buf, mv, pos, total, index, offset)
            if structural:
                yield offset, total, index, taken, None, False
            elif btype in (EPB, SPB, PB):
                yield offset, total, index, taken, items, pos + total > len(buf)
            offset, index = offset + total, index + taken
        if offset < size:
            yield offset, size - offset, index, 0, None, False

    def whole(self, offset: int, length: int, index: int) -> tuple:
        buf = self.pread(length, offset)
        btype = self.section.u32.unpack_from(buf, 0)[0]
        return self.section.block(btype, buf, memoryview(buf), 0, length, index, offset)[0]
