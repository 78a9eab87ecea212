"""Hostile captures, one per (seed, index): the files ``read_capture`` gets.

Owns the capture families. Every case starts from a sample (each pcap, the pcapng, the SLL2
one, or the tcpflow dump pair) and stacks operators from three layers:

* packets (on `pcapio.Capture`, in `packet_ops`): drop, duplicate, reorder, late starts (the first packets
  gone and the first kept payload cut mid-frame, seq and lengths fixed), payloads cut in the
  middle, payloads split into many tiny (and overlapping) segments, bit flips inside TCP
  payloads, absurd Kafka size prefixes, sequence jumps, stray
  SYN/FIN/RST flags, conflicting retransmissions, absurd timestamps, snaplen cuts, the
  capture cut into pieces (one piece read alone, or all read as one rotated session with a
  piece missing, swapped or hurt), and every packet again on a second
  interface (pcapng with two IDBs);
* container (in `file_ops`): written back as pcap (µs or ns, either byte order) or pcapng, then header fields
  made absurd (snaplen, link type, caplen, orig_len, block lengths, interface ids, if_tsresol,
  if_tsoffset, option lengths, extra section headers, unknown blocks);
* file (in `file_ops`): bit flips, truncation at any byte, blind byte edits, gzip (sound or
  corrupt).

This module owns the mix: which sample, which operators, which options, and the rotated
sessions and stream dumps. Does not run anything (see `targets`).
"""

from __future__ import annotations

import gzip
import random
from dataclasses import dataclass, field

from . import corpus, mutate
from .file_ops import absurd_pcap_header, absurd_pcapng_fields, corrupt_gzip, file_op, serialize
from .packet_ops import PACKET_OPS

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
        files[names[k]], note = file_op(files[names[k]], names[k].rsplit(".", 1)[1], cap.big_endian, rng)
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
                data, note = file_op(data, "pcapng" if written.startswith("pcapng") else "pcap", cap.big_endian, rng)
            notes.append(note)
    suffix = ".pcapng" if written.startswith("pcapng") else ".pcap"
    if rng.random() < 0.15 or (family == "file" and rng.random() < 0.3):
        data, note = corrupt_gzip(data, rng) if rng.random() < 0.7 else (gzip.compress(data, mtime=0), "gzip")
        notes.append(note)
        suffix += ".gz"
    return CaptureCase(family, {f"capture{suffix}": data}, (f"capture{suffix}",), options, tuple(notes))
