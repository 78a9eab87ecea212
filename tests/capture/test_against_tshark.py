"""Cross-check per-packet TCP fields with tshark on crafted and sample captures (skipped without tshark)."""

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kafka_protocol_source.capture import CaptureIssue, TcpSegment, read_packets
from tests.capture import pcapbuild as b

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
SAMPLES = Path(__file__).resolve().parents[2] / "sample_captures"
SAMPLE_FILES = (
    sorted(p for p in SAMPLES.glob("*") if p.is_file() and p.suffix in {".pcap", ".pcapng", ".gz", ".cap"})
    if SAMPLES.is_dir()
    else []
)


def tshark_fields(path: Path) -> list[tuple]:
    fields = ["ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport", "tcp.seq_raw", "tcp.len"]
    cmd = [
        TSHARK,
        "-r",
        str(path),
        "-Y",
        "tcp",
        "-T",
        "fields",
        "-E",
        "occurrence=l",
        "-o",
        "tcp.desegment_tcp_streams:FALSE",
    ]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        v4s, v6s, sp, v4d, v6d, dp, seq, length = line.split("\t")
        rows.append((v4s or v6s, int(sp), v4d or v6d, int(dp), int(seq), int(length)))
    return rows


def ours(path: Path) -> list[tuple]:
    return [
        (s.src_ip, s.src_port, s.dst_ip, s.dst_port, s.seq, len(s.payload) + s.missing)
        for s in read_packets(path)
        if isinstance(s, TcpSegment)
    ]


@needs_tshark
def test_crafted_capture_matches_tshark(tmp_path):
    t0 = 1_700_000_000 * 10**9
    frames = []
    for i in range(40):
        payload = bytes([i]) * (i * 37 % 1400)
        t = b.tcp(40000 + i % 3, 9092, (2**32 - 5000 + i * 1000), flags=b.ACK | b.PSH, payload=payload)
        if i % 4 == 0:
            frames.append((t0 + i, b.ether(b.ipv4(f"192.168.1.{i % 7 + 1}", "10.9.8.7", t, options=b"\x01" * 4))))
        elif i % 4 == 1:
            frames.append((t0 + i, b.ether(b.ipv6(f"2001:db8::{i:x}", "2001:db8::1", t), 0x86DD, vlans=((0x8100, 7),))))
        elif i % 4 == 2:
            frames.append((t0 + i, b.ether(b.ipv4("10.1.1.1", "10.2.2.2", t), vlans=((0x88A8, 1), (0x8100, 2)))))
        else:
            frames.append((t0 + i, b.ether(b.ipv6("fe80::1", "fe80::2", t, ext=[(0, b"\x01\x04\0\0\0\0")]), 0x86DD)))
    path = tmp_path / "crafted.pcap"
    path.write_bytes(b.pcap(frames, nanos=True))
    assert ours(path) == tshark_fields(path)


@needs_tshark
def test_crafted_sll2_pcapng_matches_tshark(tmp_path):
    packets = [
        (
            "epb",
            i % 2,
            10**6 * i,
            (b.sll2 if i % 2 else b.ether)(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(1, 2, i * 10, payload=b"k" * i))),
        )
        for i in range(20)
    ]
    path = tmp_path / "two.pcapng"
    path.write_bytes(b.pcapng([(1, None, None, 0), (276, 9, None, 0)], packets))
    assert ours(path) == tshark_fields(path)


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name for p in SAMPLE_FILES])
def test_sample_capture_reads_without_issues(path):
    items = list(read_packets(path))
    assert [i for i in items if isinstance(i, CaptureIssue)] == []


@needs_tshark
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name for p in SAMPLE_FILES])
def test_sample_capture_payload_bytes_per_direction_match_tshark(path):
    theirs = Counter()
    for s, sp, d, dp, _, n in tshark_fields(path):
        theirs[(s, sp, d, dp)] += n
    mine = Counter()
    for s in read_packets(path):
        if isinstance(s, TcpSegment):
            mine[(s.src_ip, s.src_port, s.dst_ip, s.dst_port)] += len(s.payload) + s.missing
    assert +mine == +theirs
