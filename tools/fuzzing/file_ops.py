"""Container- and file-layer operators of the hostile captures (``capture_cases``), on bytes.

Owns: writing a ``pcapio.Capture`` back as pcap (µs or ns, either byte order) or pcapng
(``serialize``); making header fields absurd (snaplen, link type, caplen, orig_len, block
lengths, interface ids, if_tsresol, if_tsoffset, option lengths, extra section headers, unknown
blocks); and whole-file edits: bit flips, truncation at any byte, blind byte edits, gzip (sound
or corrupt). Does not own the packet layer (``packet_ops``) or choosing a mix (``capture_cases``).
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib
from dataclasses import replace

from . import mutate, pcapio

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


def file_op(data: bytes, container: str, big_endian: bool, rng: random.Random) -> tuple[bytes, str]:
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
