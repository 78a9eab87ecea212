"""The same packets captured on two interfaces at once (`lo` as Ethernet and `any` as Linux
SLL2, as `dumpcap -i lo -i any` writes them) read as the one capture they are.

The two-interface captures are built from a sample and an SLL2 rewrite of it, the copies lagging
their originals by some time; `read_capture` must give the sample's exchanges, each once.
"""

import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kafka_protocol_source.pipeline import read_capture
from tests.capture import pcapbuild as b

SAMPLE = Path(__file__).resolve().parents[2] / "sample_captures" / "tansu_confluent_kafka_all_codecs.pcap"
LINUX_SLL2 = 276


def ethernet_records(path: Path) -> list[tuple[int, bytes, int]]:
    """(time ns, frame, original length) of each record of a little-endian microsecond pcap."""
    data = path.read_bytes()
    assert data[:4] == b"\xd4\xc3\xb2\xa1" and struct.unpack_from("<I", data, 20)[0] == 1
    out, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, caplen, orig = struct.unpack_from("<IIII", data, pos)
        out.append((sec * 10**9 + usec * 1000, data[pos + 16 : pos + 16 + caplen], orig))
        pos += 16 + caplen
    return out


def as_sll2(frame: bytes) -> bytes:
    """The frame as `any` shows it: the Ethernet header replaced by a Linux SLL2 one."""
    return b.sll2(frame[14:], int.from_bytes(frame[12:14], "big"))


def two_interfaces(lag_ns: int) -> bytes:
    """A pcapng with every packet on interface 0 (Ethernet) and again, `lag_ns` later, on 1 (SLL2)."""
    packets = []
    for ts, frame, orig in ethernet_records(SAMPLE):
        packets.append((ts, 0, frame, orig))
        packets.append((ts + lag_ns, 1, as_sll2(frame), orig + 6))
    packets.sort(key=lambda p: (p[0], p[1]))
    return b.pcapng(
        [(1, 9, None, 0), (LINUX_SLL2, 9, None, 0)],
        [("epb", iface, ts, frame, orig) for ts, iface, frame, orig in packets],
    )


def exchanges(path) -> Counter:
    return Counter((e.api_key, e.api_version, e.correlation_id, e.client_id, e.status) for e in read_capture(path))


@pytest.mark.parametrize(
    "lag_ns",
    [0, 5_000, 1_000_000, 500_000_000, 60 * 10**9],
    ids=["same_time", "5us", "1ms", "500ms", "after_everything"],
)
def test_packets_seen_on_two_interfaces_are_read_once(tmp_path, lag_ns):
    path = tmp_path / "lo_and_any.pcapng"
    path.write_bytes(two_interfaces(lag_ns))
    assert exchanges(path) == exchanges(SAMPLE)


@pytest.mark.skipif(shutil.which("mergecap") is None, reason="mergecap (wireshark tools) not installed")
def test_a_mergecap_merge_of_both_link_types_is_read_once(tmp_path):
    sll2 = tmp_path / "any.pcap"
    sll2.write_bytes(
        b.pcap(
            [(ts + 2_000_000, as_sll2(frame), orig + 6) for ts, frame, orig in ethernet_records(SAMPLE)],
            linktype=LINUX_SLL2,
        )
    )
    merged = tmp_path / "merged.pcapng"
    subprocess.run(["mergecap", "-F", "pcapng", "-w", str(merged), str(SAMPLE), str(sll2)], check=True)
    assert exchanges(merged) == exchanges(SAMPLE)
