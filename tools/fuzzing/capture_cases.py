"""Hostile captures, one per (seed, index): the files ``read_capture`` gets.

Owns the capture families. Every case starts from a sample (each pcap, the pcapng, the SLL2
one, or the tcpflow dump pair) and stacks operators from three layers:

* packets (on `pcapio.Capture`): drop, duplicate, reorder, late starts (the first packets
  gone and the first kept payload cut mid-frame, seq and lengths fixed), payloads cut in the
  middle, payloads split into many tiny (and overlapping) segments, bit flips inside TCP
  payloads, absurd Kafka size prefixes, sequence jumps, stray
  SYN/FIN/RST flags, conflicting retransmissions, absurd timestamps, snaplen cuts, the
  capture cut into pieces (one piece read alone, or all read as one rotated session with a
  piece missing, swapped or hurt), and every packet again on a second
  interface (pcapng with two IDBs);
* container: written back as pcap (µs or ns, either byte order) or pcapng, then header fields
  made absurd (snaplen, link type, caplen, orig_len, block lengths, interface ids, if_tsresol,
  if_tsoffset, option lengths, extra section headers, unknown blocks);
* file: bit flips, truncation at any byte, blind byte edits, gzip (sound or corrupt).

Does not run anything (see `targets`).
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib
from dataclasses import dataclass, field, replace

from . import corpus, mutate, pcapio

PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
MAX_INPUT = 1 << 20
PORT_OPTIONS = ([9092], [9092], [9092, 9093], [])  # []: find Kafka by content alone


@dataclass(frozen=True)
class CaptureCase:
    family: str
    files: dict[str, bytes]
    read: tuple[str, ...]  # the files read_capture is given (several: one rotated session, in order)
    options: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return sum(len(d) for d in self.files.values())

    @property
    def accountable(self) -> bool:
        """Whether the accounting check applies (it reads whole captures, not connection slices)."""
        return len(self.read) == 1 and "apis" not in self.options and "window_ns" not in self.options

    @property
    def accounting_options(self) -> dict:
        return {
            k: v
            for k, v in self.options.items()
            if k in ("ports", "detect_kafka", "max_frame_size", "max_buffered_bytes")
        }

    def meta(self) -> dict:
        return {
            "family": self.family,
            "read": list(self.read),
            "options": self.options,
            "notes": list(self.notes),
            "files": sorted(self.files),
        }


def sources() -> list[str]:
    return [p.name for p in corpus.capture_paths()]


def warm() -> None:
    corpus.real_frames()
    for name in sources():
        corpus.sample_capture(name)


# -- packet layer ------------------------------------------------------------------------------


def _linktype(cap: pcapio.Capture, p: pcapio.Packet) -> int:
    return cap.interfaces[p.iface].linktype if p.iface < len(cap.interfaces) else cap.interfaces[0].linktype


def _data_packets(cap: pcapio.Capture) -> list[int]:
    out = []
    for i, p in enumerate(cap.packets):
        span = pcapio.tcp_span(_linktype(cap, p), p.data)
        if span is not None and span.end > span.payload:
            out.append(i)
    return out


def _payload(cap, p) -> tuple[pcapio.TcpSpan | None, bytes]:
    span = pcapio.tcp_span(_linktype(cap, p), p.data)
    return span, (p.data[span.payload : span.end] if span else b"")


def drop_packets(cap, rng):
    pkts = list(cap.packets)
    if rng.random() < 0.5:
        for _ in range(rng.choice((1, 1, 2, 5))):
            if pkts:
                del pkts[rng.randrange(len(pkts))]
    else:
        i = rng.randrange(len(pkts))
        del pkts[i : i + rng.randrange(1, 20)]
    return cap.with_packets(pkts)


def duplicate_packets(cap, rng):
    pkts = list(cap.packets)
    for _ in range(rng.choice((1, 2, 5, 20))):
        i = rng.randrange(len(pkts))
        j = min(len(pkts), i + rng.choice((0, 1, 3, 50)))
        pkts.insert(j, pkts[i])
    return cap.with_packets(pkts)


def reorder_packets(cap, rng):
    pkts = list(cap.packets)
    r = rng.random()
    if r < 0.4:
        i = rng.randrange(len(pkts) - 1)
        pkts[i], pkts[i + 1] = pkts[i + 1], pkts[i]
    elif r < 0.7:
        i, j = rng.randrange(len(pkts)), rng.randrange(len(pkts))
        pkts.insert(j, pkts.pop(i))
    else:
        i = rng.randrange(len(pkts))
        window = pkts[i : i + rng.choice((3, 10, 50))]
        rng.shuffle(window)
        pkts[i : i + len(window)] = window
    return cap.with_packets(pkts)


def _cut_payload(cap, index: int, cut: int) -> pcapio.Packet:
    p = cap.packets[index]
    _, payload = _payload(cap, p)
    cut = min(cut, len(payload))
    return pcapio.with_payload(_linktype(cap, p), p, payload[cut:], seq_delta=cut)


def late_start(cap, rng):
    """The capture starts late: the first k packets are gone and the first kept payload is cut mid-frame."""
    data = _data_packets(cap)
    start = rng.choice(data[: max(1, len(data) // 2)]) if data else 0
    pkts = list(cap.packets)
    _, payload = _payload(cap, pkts[start])
    cut = rng.randrange(1, len(payload)) if len(payload) > 1 else 0
    pkts[start] = _cut_payload(cap, start, cut)
    return cap.with_packets(pkts[start:])


def cut_mid_payload(cap, rng):
    data = _data_packets(cap)
    if not data:
        return cap
    i = rng.choice(data)
    _, payload = _payload(cap, cap.packets[i])
    pkts = list(cap.packets)
    pkts[i] = _cut_payload(cap, i, rng.randrange(1, len(payload) + 1))
    return cap.with_packets(pkts)


def payload_flips(cap, rng):
    data = _data_packets(cap)
    pkts = list(cap.packets)
    for i in rng.sample(data, min(len(data), rng.choice((1, 2, 5)))):
        span, payload = _payload(cap, pkts[i])
        edited, _ = mutate.mutate(payload, rng, rounds=1)
        if len(edited) == len(payload):
            pkts[i] = replace(pkts[i], data=pkts[i].data[: span.payload] + edited + pkts[i].data[span.end :])
        else:
            pkts[i] = pcapio.with_payload(_linktype(cap, pkts[i]), pkts[i], edited)
    return cap.with_packets(pkts)


def absurd_size_prefix(cap, rng):
    """A Kafka size prefix (the first 4 payload bytes of a packet) made huge, negative or tiny."""
    data = _data_packets(cap)
    pkts = list(cap.packets)
    for i in rng.sample(data, min(len(data), rng.choice((1, 1, 3)))):
        span, payload = _payload(cap, pkts[i])
        if len(payload) < 4:
            continue
        size = rng.choice((0x7FFFFFFF, -1, -0x80000000, 0, 1, 3, 4, 5, 100 * 1024 * 1024 + 1, len(payload) + 1000))
        edited = struct.pack(">i", size) + payload[4:]
        pkts[i] = replace(pkts[i], data=pkts[i].data[: span.payload] + edited + pkts[i].data[span.end :])
    return cap.with_packets(pkts)


def _set_tcp(cap, p, *, seq_delta: int = 0, flags: int | None = None, ports: tuple[int, int] | None = None):
    span = pcapio.tcp_span(_linktype(cap, p), p.data)
    if span is None:
        return p
    data = bytearray(p.data)
    t = span.tcp
    seq = (int.from_bytes(data[t + 4 : t + 8], "big") + seq_delta) % 2**32
    data[t + 4 : t + 8] = seq.to_bytes(4, "big")
    if flags is not None:
        data[t + 13] = flags & 0xFF
    if ports is not None:
        data[t : t + 4] = struct.pack("!HH", *ports)
    return replace(p, data=bytes(data))


def tcp_chaos(cap, rng):
    pkts = list(cap.packets)
    data = _data_packets(cap) or list(range(len(pkts)))
    i = rng.choice(data)
    r = rng.random()
    if r < 0.25:
        pkts[i] = _set_tcp(cap, pkts[i], seq_delta=rng.choice((1, -1, 1000, -1000, 2**31, 2**32 - 5, 1 << 24)))
        notes = "seq jump"
    elif r < 0.5:
        pkts[i] = _set_tcp(cap, pkts[i], flags=rng.choice((0x02, 0x04, 0x01, 0x12, 0x11, 0x14, 0x00, 0xFF)))
        notes = "flags"
    elif r < 0.75:
        span, payload = _payload(cap, pkts[i])
        other = bytes(b ^ 0x5A for b in payload)  # same bytes count, different content: a conflicting retransmit
        pkts.insert(
            min(len(pkts), i + rng.choice((1, 2, 10))), pcapio.with_payload(_linktype(cap, pkts[i]), pkts[i], other)
        )
        notes = "conflicting retransmission"
    else:
        span = pcapio.tcp_span(_linktype(cap, pkts[i]), pkts[i].data)
        if span is not None:
            sport, dport = struct.unpack_from("!HH", pkts[i].data, span.tcp)
            pkts[i] = _set_tcp(cap, pkts[i], ports=(dport, sport) if rng.random() < 0.5 else (sport, 9092))
        notes = "ports"
    return cap.with_packets(pkts), notes


def absurd_timestamps(cap, rng):
    pkts = list(cap.packets)
    value = rng.choice((0, 1, (2**32 - 1) * 10**9, 2**63 - 1, -(10**18), 253402300800 * 10**9, -1))
    if rng.random() < 0.5:
        i = rng.randrange(len(pkts))
        pkts[i] = replace(pkts[i], ts_ns=value)
    else:
        pkts = [replace(p, ts_ns=value + k) for k, p in enumerate(pkts)]
    return cap.with_packets(
        [replace(p, ts_ns=max(0, min(p.ts_ns, (2**32 - 1) * 10**9))) if cap.container == "pcap" else p for p in pkts]
    )


def snaplen_cut(cap, rng):
    pkts = list(cap.packets)
    data = _data_packets(cap)
    for i in rng.sample(data, min(len(data), rng.choice((1, 3, 10)))):
        p = pkts[i]
        pkts[i] = replace(p, data=p.data[: rng.randrange(len(p.data) + 1)])
    return cap.with_packets(pkts)


def piece(cap, rng):
    """The capture cut into pieces at packet boundaries (as ``editcap -c``); one piece, read alone."""
    per = rng.choice((1, 2, 5, 10, 30, 100))
    pieces = max(1, (len(cap.packets) + per - 1) // per)
    k = rng.randrange(pieces)
    return cap.with_packets(cap.packets[k * per : (k + 1) * per]), f"piece {k} of {pieces} ({per} packets each)"


def second_interface(cap, rng):
    """Every packet again on a second interface (pcapng, two IDBs), as ``-i any`` plus ``-i lo`` would give."""
    first = cap.interfaces[0]
    raw = rng.random() < 0.5
    second = pcapio.Interface(pcapio.RAW_IP if raw else first.linktype, first.snaplen, rng.choice((6, 9)))
    pkts = []
    jitter = rng.choice((0, 0, 1000, -1000, 10**9))
    for p in cap.packets:
        pkts.append(replace(p, iface=0))
        data = p.data
        if raw:
            span = pcapio.tcp_span(first.linktype, data)
            if span is None:
                continue
            data = data[span.ip :]
        pkts.append(pcapio.Packet(p.ts_ns + jitter, data, len(data), 1))
    if rng.random() < 0.3:
        pkts.sort(key=lambda p: p.ts_ns)
    return pcapio.Capture(pkts, [first, second], "pcapng", True, cap.big_endian)


def resegment(cap, rng):
    """Data packets split into many small segments (down to one byte), now and then overlapping:
    what a busy or hostile path gives, and what makes quadratic buffering show."""
    data = _data_packets(cap)
    chosen = set(rng.sample(data, min(len(data), rng.choice((1, 5, 20, len(data))))))
    budget = 10000  # packets added at most, to keep the file under a megabyte
    pkts = []
    for i, p in enumerate(cap.packets):
        if i not in chosen or budget <= 0:
            pkts.append(p)
            continue
        linktype = _linktype(cap, p)
        _, payload = _payload(cap, p)
        most = rng.choice((1, 2, 7, 100))
        pos = 0
        while pos < len(payload) and budget > 0:
            size = rng.randint(1, most)
            start = max(0, pos - rng.choice((0, 0, 0, 1, 3))) if pos else 0  # overlap with the last piece
            piece = payload[start : pos + size]
            pkts.append(pcapio.with_payload(linktype, p, piece, seq_delta=start))
            pos += size
            budget -= 1
        if pos < len(payload):
            pkts.append(pcapio.with_payload(linktype, p, payload[pos:], seq_delta=pos))
    return cap.with_packets(pkts)


def _needs(count: int, op):
    """``op`` where the capture has at least ``count`` packets; the capture as it is otherwise."""

    def guarded(cap, rng):
        return op(cap, rng) if len(cap.packets) >= count else cap

    guarded.__name__ = op.__name__
    return guarded


PACKET_OPS = {
    "drop": _needs(1, drop_packets),
    "duplicate": _needs(1, duplicate_packets),
    "reorder": _needs(2, reorder_packets),
    "late_start": _needs(1, late_start),
    "cut_mid_payload": _needs(1, cut_mid_payload),
    "payload_flips": payload_flips,
    "absurd_size_prefix": absurd_size_prefix,
    "tcp_chaos": _needs(1, tcp_chaos),
    "absurd_timestamps": _needs(1, absurd_timestamps),
    "snaplen_cut": snaplen_cut,
    "piece": piece,
    "second_interface": second_interface,
    "resegment": resegment,
}


# -- container layer -----------------------------------------------------------------------------


def pcap_records(data: bytes, endian: str) -> list[int]:
    """File offsets of the record headers of a well-formed pcap."""
    out, pos = [], 24
    while pos + 16 <= len(data):
        out.append(pos)
        pos += 16 + struct.unpack_from(endian + "I", data, pos + 8)[0]
    return out


def pcapng_blocks(data: bytes, endian: str) -> list[tuple[int, int, int]]:
    """(offset, type, total length) of every block of a well-formed pcapng."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        btype, total = struct.unpack_from(endian + "II", data, pos)
        out.append((pos, btype, total))
        if total < 12:
            break
        pos += total
    return out


U32_ABSURD = (0, 1, 11, 12, 13, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF0, 1 << 26, (1 << 26) + 4, 65535, 262145)


def absurd_pcap_header(data: bytes, endian: str, rng: random.Random) -> tuple[bytes, str]:
    out = bytearray(data)
    records = pcap_records(data, endian)
    r = rng.random()
    if r < 0.2:
        out[16:20] = struct.pack(endian + "I", rng.choice(U32_ABSURD))
        return bytes(out), "snaplen"
    if r < 0.4:
        linktype = rng.choice((0, 1, 101, 108, 113, 12, 14, 228, 229, 276, 147, 0xFFFF, 0x10000001, 0xFFFFFFFF, 9999))
        out[20:24] = struct.pack(endian + "I", linktype)
        return bytes(out), f"linktype {linktype}"
    if r < 0.5:
        out[4:8] = struct.pack(endian + "HH", rng.choice((0, 2, 3, 0xFFFF)), rng.choice((0, 4, 0xFFFF)))
        return bytes(out), "version"
    if not records:
        return bytes(out), "no records"
    at = rng.choice(records)
    if r < 0.8:
        out[at + 8 : at + 12] = struct.pack(endian + "I", rng.choice(U32_ABSURD))
        return bytes(out), "caplen"
    if r < 0.9:
        out[at + 12 : at + 16] = struct.pack(endian + "I", rng.choice(U32_ABSURD))
        return bytes(out), "orig_len"
    seconds = rng.choice((0, 0xFFFFFFFF, 0x7FFFFFFF))
    out[at : at + 8] = struct.pack(endian + "II", seconds, rng.choice((0, 999999, 10**9, 0xFFFFFFFF)))
    return bytes(out), "timestamp"


def absurd_pcapng_fields(data: bytes, endian: str, rng: random.Random) -> tuple[bytes, str]:
    out = bytearray(data)
    blocks = pcapng_blocks(data, endian)
    r = rng.random()
    u32 = struct.Struct(endian + "I")
    if r < 0.25:
        at, btype, total = rng.choice(blocks)
        pos = at + (rng.choice((4, total - 4)) if total >= 12 else 4)  # the leading or the trailing length
        if pos + 4 <= len(out):
            out[pos : pos + 4] = u32.pack(rng.choice(U32_ABSURD))
        return bytes(out), f"block length of type {btype:#x}"
    if r < 0.45:
        idbs = [b for b in blocks if b[1] == pcapio.IDB]
        if not idbs:
            return bytes(out), "no idb"
        at, _, total = rng.choice(idbs)
        tsresol = rng.choice(
            (0, 1, 6, 9, 10, 12, 19, 20, 0x7F, 0x80, 0x80 | 10, 0x80 | 30, 0x80 | 63, 0x80 | 0x7F, 0xFF)
        )
        tsoffset = rng.choice((None, 0, 2**62, -(2**62), 2**63 - 1, -(2**63), 10**10))
        linktype = rng.choice((None, None, 0, 101, 276, 0xFFFF))
        snaplen = rng.choice((None, None, 0, 1, 0xFFFFFFFF))
        body = bytearray(data[at + 8 : at + total - 4])
        if linktype is not None:
            body[0:2] = struct.pack(endian + "H", linktype)
        if snaplen is not None:
            body[4:8] = u32.pack(snaplen)
        opts = pcapio.option(9, bytes([tsresol]), endian)
        if tsoffset is not None:
            opts += pcapio.option(14, struct.pack(endian + "q", tsoffset), endian)
        if rng.random() < 0.2:
            opts += struct.pack(endian + "HH", 2, rng.choice((0xFFFF, 0x8000, 200)))  # an option longer than the block
        block = pcapio.block(pcapio.IDB, bytes(body[:8]) + opts + struct.pack(endian + "HH", 0, 0), endian)
        note = f"idb tsresol={tsresol} tsoffset={tsoffset} linktype={linktype} snaplen={snaplen}"
        return bytes(out[:at]) + block + bytes(out[at + total :]), note
    epbs = [b for b in blocks if b[1] == pcapio.EPB]
    if r < 0.65 and epbs:
        at, _, total = rng.choice(epbs)
        what = rng.choice(("iface", "caplen", "orig_len", "ts"))
        offset = {"iface": 8, "caplen": 20, "orig_len": 24, "ts": 12}[what]
        value = rng.choice((1, 2, 0xFFFF, 0xFFFFFFFF, 0x7FFFFFFF, total, total - 27, total - 28))
        out[at + offset : at + offset + 4] = u32.pack(value & 0xFFFFFFFF)
        return bytes(out), f"epb {what}={value}"
    if r < 0.75 and epbs:
        # Simple packet blocks and obsolete packet blocks in place of an EPB.
        at, _, total = rng.choice(epbs)
        iface, hi, lo, caplen, orig = struct.unpack_from(endian + "IIIII", data, at + 8)
        packet = data[at + 28 : at + 28 + caplen]
        if rng.random() < 0.5:
            new = pcapio.block(pcapio.SPB, u32.pack(rng.choice((orig, 0, 0xFFFFFFFF, caplen + 1))) + packet, endian)
        else:
            header = struct.pack(endian + "HHIIII", rng.choice((iface, 7)), 0, hi, lo, caplen, orig)
            new = pcapio.block(pcapio.PB, header + packet, endian)
        return bytes(out[:at]) + new + bytes(out[at + total :]), "spb/pb"
    at = rng.choice(blocks)[0] if blocks else len(out)
    r2 = rng.random()
    if r2 < 0.4:
        extra = pcapio.shb(">" if endian == "<" and rng.random() < 0.5 else endian)
        note = "extra section header"
    elif r2 < 0.7:
        extra = pcapio.block(
            rng.choice((0x0BAD, 5, 4, 0x80000001, 0x00000BAD)), rng.randbytes(rng.randrange(0, 40)), endian
        )
        note = "unknown block"
    else:
        extra = pcapio.idb(
            pcapio.Interface(rng.choice((1, 101, 276, 9999)), 65535, rng.choice((6, 9, 0x80 | 20))), endian
        )
        note = "extra interface"
    return bytes(out[:at]) + extra + bytes(out[at:]), note


def serialize(cap: pcapio.Capture, rng: random.Random) -> tuple[bytes, str]:
    """Write the capture, sometimes in another container, precision or byte order."""
    r = rng.random()
    if cap.container == "pcap" and r < 0.15:
        cap = replace(
            cap, container="pcapng", interfaces=[replace(cap.interfaces[0], tsresol=rng.choice((6, 9, None)))]
        )
    elif cap.container == "pcap" and r < 0.25:
        cap = replace(cap, nano=not cap.nano)
    if rng.random() < 0.1:
        cap = replace(cap, big_endian=not cap.big_endian)
    if cap.container == "pcap":
        return pcapio.write_pcap(cap), f"pcap {'ns' if cap.nano else 'us'} {'be' if cap.big_endian else 'le'}"
    return pcapio.write_pcapng(cap), f"pcapng {len(cap.interfaces)} interfaces {'be' if cap.big_endian else 'le'}"


# -- file layer ------------------------------------------------------------------------------------


def corrupt_gzip(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    packed = gzip.compress(data, compresslevel=rng.choice((1, 6)), mtime=0)
    r = rng.random()
    if r < 0.3:
        return packed, "gzip"
    if r < 0.5:
        return packed[: rng.randrange(2, len(packed))], "gzip truncated"
    if r < 0.65:
        return mutate.flip_bits(packed[:10], rng, 1) + packed[10:] if rng.random() < 0.3 else packed[
            :10
        ] + mutate.flip_bits(packed[10:], rng), "gzip bit flips"
    if r < 0.75:
        return packed[:-8] + struct.pack("<II", zlib.crc32(b"x"), len(data) + 1), "gzip bad trailer"
    if r < 0.85:
        return packed + rng.randbytes(rng.randrange(1, 64)), "gzip trailing junk"
    if r < 0.92:
        half = len(data) // 2
        return gzip.compress(data[:half], mtime=0) + gzip.compress(data[half:], mtime=0), "gzip two members"
    return gzip.compress(packed, mtime=0), "gzip of gzip"


FILE_OPS = ("bitflips", "truncate", "bytes", "header")


def _file_op(data: bytes, container: str, big_endian: bool, rng: random.Random) -> tuple[bytes, str]:
    op = rng.choice((*FILE_OPS, "header", "header"))
    if op == "bitflips":
        return mutate.flip_bits(data, rng, rng.choice((1, 4, 16, 64))), "bit flips"
    if op == "truncate":
        return mutate.truncate(data, rng), "truncated"
    if op == "bytes":
        edited, names = mutate.mutate(data, rng)
        return edited, "bytes " + ",".join(names)
    endian = ">" if big_endian else "<"
    if container == "pcapng":
        return absurd_pcapng_fields(data, endian, rng)
    return absurd_pcap_header(data, endian, rng)


# -- dumps -------------------------------------------------------------------------------------------


def dump_case(rng: random.Random, options: dict) -> CaptureCase:
    directory = rng.choice(corpus.dump_dirs())
    files = {p.name: p.read_bytes() for p in sorted(directory.iterdir())}
    notes = [directory.name]
    for name in list(files):
        if rng.random() < 0.6:
            files[name], ops = mutate.mutate(files[name], rng)
            notes.append(f"{name}: {','.join(ops)}")
    names = sorted(files)
    read = rng.choice(names)
    if rng.random() < 0.2:  # read alone, under a name that does not pair
        files = {"dump.bin": files[read]}
        read = "dump.bin"
    return CaptureCase("dump", files, (read,), options, tuple(notes))


def session_case(rng: random.Random, options: dict) -> CaptureCase:
    """A capture cut into pieces read together as one rotated session, some pieces hurt."""
    source = rng.choice(sources())
    cap = corpus.sample_capture(source)
    per = rng.choice((2, 5, 20, 60))
    pieces = [cap.with_packets(cap.packets[i : i + per]) for i in range(0, len(cap.packets), per)]
    notes = [source, f"{len(pieces)} pieces of {per} packets"]
    r = rng.random()
    if r < 0.2 and len(pieces) > 2:
        k = rng.randrange(len(pieces))
        del pieces[k]
        notes.append(f"piece {k} missing")
    elif r < 0.35 and len(pieces) > 2:
        k = rng.randrange(len(pieces) - 1)
        pieces[k], pieces[k + 1] = pieces[k + 1], pieces[k]
        notes.append(f"pieces {k} and {k + 1} swapped")
    files = {}
    for k, piece_cap in enumerate(pieces):
        data, _ = serialize(piece_cap, random.Random(rng.random()))
        suffix = "pcapng" if data[:4] == PCAPNG_MAGIC else "pcap"
        files[f"piece{k:03d}.{suffix}"] = data
    names = list(files)
    if rng.random() < 0.4:
        k = rng.randrange(len(names))
        files[names[k]], note = _file_op(files[names[k]], names[k].rsplit(".", 1)[1], cap.big_endian, rng)
        notes.append(f"{names[k]}: {note}")
    return CaptureCase("session", files, tuple(names), options, tuple(notes))


# -- the mix -----------------------------------------------------------------------------------------

FAMILIES = {"packets": 45, "container": 20, "file": 12, "mixed": 15, "clean": 2, "dump": 6, "session": 5}


def _options(rng: random.Random) -> dict:
    options: dict = {"ports": list(rng.choice(PORT_OPTIONS)), "detect_kafka": rng.random() < 0.9}
    r = rng.random()
    if r < 0.06:
        options["max_buffered_bytes"] = rng.choice((0, 1, 100, 4096))
    elif r < 0.12:
        options["max_frame_size"] = rng.choice((0, 4, 64, 1000))
    elif r < 0.17:
        options["apis"] = rng.choice(([0], [1, 3], [18]))
    elif r < 0.19:
        options["window_ns"] = rng.choice(((0, None), (None, 0), (1_700_000_000 * 10**9, None)))
    return options


def case(seed: int, index: int, families: dict[str, float] | None = None) -> CaptureCase:
    """The capture input number ``index`` of the campaign with ``seed``."""
    rng = random.Random(f"captures:{seed}:{index}")
    weights = families or FAMILIES
    names = [n for n, w in weights.items() if w > 0]
    family = rng.choices(names, [weights[n] for n in names])[0]
    options = _options(rng)
    if family == "dump":
        return dump_case(rng, options)
    if family == "session":
        return session_case(rng, options)
    source = rng.choice(sources())
    cap = corpus.sample_capture(source)
    notes = [source]
    if family in ("packets", "mixed"):
        for _ in range(rng.choice((1, 1, 2, 3))):
            name = rng.choice(list(PACKET_OPS))
            out = PACKET_OPS[name](cap, rng)
            cap, note = out if isinstance(out, tuple) else (out, "")
            notes.append(f"{name} {note}".strip())
            if not cap.packets:
                break
    data, written = serialize(cap, rng) if family != "clean" else (corpus.sample_bytes(source), "as recorded")
    notes.append(written)
    if len(data) > MAX_INPUT:  # the memory bound is for inputs under a megabyte
        data = data[:MAX_INPUT]
        notes.append(f"cut at {MAX_INPUT} bytes")
    if family in ("container", "file", "mixed"):
        rounds = 1 if family != "mixed" else rng.choice((1, 2))
        for _ in range(rounds):
            if family == "container":
                endian = ">" if cap.big_endian else "<"
                if cap.container == "pcapng" or written.startswith("pcapng"):
                    data, note = absurd_pcapng_fields(data, endian, rng)
                else:
                    data, note = absurd_pcap_header(data, endian, rng)
            else:
                data, note = _file_op(data, "pcapng" if written.startswith("pcapng") else "pcap", cap.big_endian, rng)
            notes.append(note)
    suffix = ".pcapng" if written.startswith("pcapng") else ".pcap"
    if rng.random() < 0.15 or (family == "file" and rng.random() < 0.3):
        data, note = corrupt_gzip(data, rng) if rng.random() < 0.7 else (gzip.compress(data, mtime=0), "gzip")
        notes.append(note)
        suffix += ".gz"
    return CaptureCase(family, {f"capture{suffix}": data}, (f"capture{suffix}",), options, tuple(notes))
