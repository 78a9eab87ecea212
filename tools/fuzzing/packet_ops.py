"""Packet-layer operators of the hostile captures (``capture_cases``), on a ``pcapio.Capture``.

Owns: drop, duplicate, reorder, late starts (the first packets gone and the first kept payload
cut mid-frame, seq and lengths fixed), payloads cut in the middle, payloads split into many tiny
(and overlapping) segments, bit flips inside TCP payloads, absurd Kafka size prefixes, sequence
jumps, stray SYN/FIN/RST flags, conflicting retransmissions, absurd timestamps, snaplen cuts, a
piece of the capture, and every packet again on a second interface. ``PACKET_OPS`` names them.
Does not own writing the capture out (``file_ops``) or choosing a mix (``capture_cases``).
"""

from __future__ import annotations

import struct
from dataclasses import replace

from . import mutate, pcapio

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


def _with_same_length_payload(p: pcapio.Packet, span, edited: bytes) -> pcapio.Packet:
    """The packet with its TCP payload replaced by bytes of the same length (headers kept as they are)."""
    return replace(p, data=p.data[: span.payload] + edited + p.data[span.end :])


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
            pkts[i] = _with_same_length_payload(pkts[i], span, edited)
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
        pkts[i] = _with_same_length_payload(pkts[i], span, struct.pack(">i", size) + payload[4:])
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
