"""The index pass: readers sharing a capture by connection read only their own records, and
together they see exactly what one reader of the whole file sees.

For each reader, ``read_packets(path, runs=...)`` must give every segment of its connections
with the packet index and file offset it has in the whole file, in file order; reader 0 must
give every issue of the file; and all readers together must read each packet record once (the
file header, pcapng section headers and interface descriptions, IP fragments and unplaceable
records excepted, which every reader reads).
"""

from __future__ import annotations

import socket
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_protocol_source.capture import CaptureIssue, TcpSegment, gzip_ranges, index, read_packets
from kafka_protocol_source.capture.decode import PacketDecoder
from kafka_protocol_source.capture.fragments import FragmentReassembler
from kafka_protocol_source.capture.index import HEAD, index_records, plain_tcp_key

from . import pcapbuild as pb

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "sample_captures").glob("*.pcap*"))
COUNTS = (2, 3, 8)


def slice_of(endpoints, count: int) -> int:
    return zlib.crc32("|".join(map(str, endpoints)).encode()) % count


def _endpoints(s: TcpSegment):
    a, b = (s.src_ip, s.src_port), (s.dst_ip, s.dst_port)
    return a + b if a <= b else b + a


def assert_split_reads_equal_whole(path: Path, count: int) -> list:
    runs = index_records(path, count, lambda e: slice_of(e, count))
    assert runs is not None and len(runs) == count
    whole = list(read_packets(path))
    segments: list[TcpSegment] = []
    for reader, reader_runs in enumerate(runs):
        items = list(read_packets(path, runs=reader_runs))
        own = [x for x in items if type(x) is TcpSegment and slice_of(_endpoints(x), count) == reader]
        assert [s.packet_index for s in own] == sorted(s.packet_index for s in own)
        segments += own
        if reader == 0:
            assert [x for x in items if type(x) is CaptureIssue] == [x for x in whole if type(x) is CaptureIssue]
    assert sorted(segments, key=lambda s: s.packet_index) == [x for x in whole if type(x) is TcpSegment]
    return runs


# The pass reads the file in windows: small ones put records and blocks across their edges.
WINDOWS = (None, 300, 1000)


@pytest.fixture(params=WINDOWS, ids=lambda w: f"window={w or 'default'}")
def window(request, monkeypatch):
    if request.param is not None:
        monkeypatch.setattr(index, "CHUNK", request.param)
    return request.param


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_split_reads_of_the_samples_equal_the_whole_read(path, count, window):
    runs = assert_split_reads_equal_whole(path, count)
    size = path.stat().st_size
    if path.suffix == ".pcap":  # only the 24-byte file header is read by every reader
        assert sum(r.byte_count for r in runs) == size + 24 * (count - 1)
    else:  # the section header and interface descriptions
        assert sum(r.byte_count for r in runs) < size * 1.05


def _connections(n: int):
    """Segments of ``n`` interleaved connections, some IPv6, some behind a VLAN tag."""
    frames = []
    for i in range(n):
        client, broker = f"10.0.{i // 250}.{i % 250 + 1}", "10.9.0.1"
        for k in range(3):
            seg = pb.tcp(40000 + i, 9092, 1000 * k, flags=pb.ACK | pb.PSH, payload=bytes([i]) * (50 + k))
            if i % 3 == 1:
                frames.append(pb.ether(pb.ipv6(f"fd00::{i + 1}", "fd00::99", seg), ethertype=0x86DD))
            elif i % 3 == 2:
                frames.append(pb.ether(pb.ipv4(client, broker, seg), vlans=((0x8100, 7),)))
            else:
                frames.append(pb.ether(pb.ipv4(client, broker, seg)))
    return frames


def _awkward_frames():
    """Fragments, non-TCP, headers longer than the pass reads, a snaplen cut."""
    payload = pb.tcp(50000, 9092, 7, flags=pb.ACK | pb.PSH, payload=b"f" * 400)
    frags4 = [pb.ether(f) for f in pb.ipv4_fragments("10.1.1.1", "10.9.0.1", payload, ident=0x77, size=160)]
    frags6 = [
        pb.ether(f, ethertype=0x86DD) for f in pb.ipv6_fragments("fd01::1", "fd00::99", payload, ident=9, size=160)
    ]
    long_headers = pb.ether(
        pb.ipv6("fd02::1", "fd00::99", pb.tcp(50001, 9092, 1, payload=b"x" * 30), ext=[(60, b"\x01" * (HEAD + 40))]),
        ethertype=0x86DD,
    )
    udp = pb.ether(pb.ipv4("10.1.1.2", "10.9.0.1", b"\0" * 28, proto=17))
    arp = pb.ether(b"\0" * 28, ethertype=0x0806)
    return [frags4[0], udp, frags6[1], frags4[1], arp, long_headers, frags6[0], frags4[2], frags6[2]]


def _interleave(a, b):
    out = []
    for i, frame in enumerate(a):
        out.append(frame)
        if i % 4 == 0 and b:
            out.append(b.pop(0))
    return out + b


@pytest.mark.parametrize("count", COUNTS)
def test_awkward_packets_in_a_pcap(tmp_path, count, window):
    frames = _interleave(_connections(40), _awkward_frames())
    packets = [(10**18 + i * 1000, f) for i, f in enumerate(frames)]
    cut = pb.ether(pb.ipv4("10.0.0.1", "10.9.0.1", pb.tcp(40000, 9092, 5000, payload=b"c" * 100)))
    packets.insert(30, (10**18 + 30_500, cut[:40], len(cut)))  # snaplen cut inside the TCP header
    path = tmp_path / "awkward.pcap"
    path.write_bytes(pb.pcap(packets)[:-7])  # and the last record cut short
    assert_split_reads_equal_whole(path, count)


@pytest.mark.parametrize("count", COUNTS)
def test_pcapng_with_interfaces_sections_and_a_corrupt_block(tmp_path, count, window):
    frames = _interleave(_connections(30), _awkward_frames())
    sll_frames = [
        pb.sll(pb.ipv4(f"10.5.0.{i}", "10.9.0.1", pb.tcp(41000 + i, 9092, 0, payload=b"s"))) for i in range(9)
    ]
    interfaces = [(1, 9, None, 0), (113, None, None, 0)]
    first = [("epb", 0, 10**9 * (1000 + i), f) for i, f in enumerate(frames)]
    first += [("epb", 1, 10**6 * (2000 + i), f) for i, f in enumerate(sll_frames)]
    first.sort(key=lambda p: p[2] if p[1] == 0 else p[2] * 1000)
    second = [("epb", 0, 10**6 * (3000 + i), f) for i, f in enumerate(_connections(5))]
    second.append(("spb", 0, 0, frames[0]))
    data = pb.pcapng(interfaces, first) + pb.pcapng([(1, None, None, 0)], second, unknown_block=False)
    path = tmp_path / "awkward.pcapng"
    path.write_bytes(data)
    assert_split_reads_equal_whole(path, count)
    corrupt = bytearray(data)
    corrupt[len(data) * 2 // 3 : len(data) * 2 // 3 + 64] = b"\xff" * 64  # a block length from nowhere
    path.write_bytes(bytes(corrupt))
    assert_split_reads_equal_whole(path, count)


def _gzipped(data: bytes, how: str) -> bytes:
    packed = pb.gz(data)
    if how == "two members":  # as `cat a.gz b.gz` makes
        return pb.gz(data[: len(data) // 3]) + pb.gz(data[len(data) // 3 :])
    if how == "trailer cut":  # every byte decompresses, the stream still ends early
        return packed[:-5]
    if how == "cut":
        return packed[: len(packed) * 2 // 3]
    if how == "corrupt":
        middle = len(packed) // 2
        return packed[:middle] + bytes([packed[middle] ^ 0xFF]) + packed[middle + 1 :]
    return packed


@pytest.mark.parametrize("how", ["whole", "two members", "trailer cut", "cut", "corrupt"])
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("path", [SAMPLES[0], SAMPLES[1], SAMPLES[-1]], ids=lambda p: p.name)
def test_a_gzipped_capture_is_indexed_in_its_decompressed_bytes(tmp_path, monkeypatch, path, count, how, window):
    """Readers decompress the file whole, read only their runs of it, and reader 0 says why the
    data ended early as one reader of the whole file does."""
    monkeypatch.setattr(gzip_ranges, "PIECE", 777)  # decompressed pieces end anywhere in records
    gzipped = tmp_path / (path.name + ".gz")
    gzipped.write_bytes(_gzipped(path.read_bytes(), how))
    runs = assert_split_reads_equal_whole(gzipped, count)
    if how in ("whole", "two members") and path.suffix == ".pcap":
        assert sum(r.byte_count for r in runs) == path.stat().st_size + 24 * (count - 1)
    if how != "whole":
        assert how == "two members" or any(type(x) is CaptureIssue for x in read_packets(gzipped))


def test_a_gzipped_file_that_is_not_a_capture_is_not_indexed(tmp_path):
    path = tmp_path / "notes.txt.gz"
    path.write_bytes(pb.gz(b"not a capture at all" * 10))
    assert index_records(path, 4, lambda e: slice_of(e, 4)) is None


def test_a_file_that_shrank_after_the_index_ends_with_a_read_error(tmp_path):
    path = tmp_path / "shrinks.pcap"
    path.write_bytes(SAMPLES[0].read_bytes())
    runs = index_records(path, 2, lambda e: slice_of(e, 2))
    assert runs is not None
    path.write_bytes(SAMPLES[0].read_bytes()[: path.stat().st_size // 2])
    items = list(read_packets(path, runs=runs[0]))
    assert type(items[-1]) is CaptureIssue and items[-1].kind == "read_error"


def test_a_file_that_cannot_be_read_is_not_indexed(tmp_path):
    """The readers then read it whole and say what is wrong with it; planning never fails on it."""
    assert index_records(tmp_path / "gone.pcap", 2, lambda e: slice_of(e, 2)) is None
    (tmp_path / "text.pcap").write_text("not a capture")
    assert index_records(tmp_path / "text.pcap", 2, lambda e: slice_of(e, 2)) is None


_BASE_FRAMES = [
    pb.ether(pb.ipv4("10.0.0.1", "10.9.0.1", pb.tcp(40000, 9092, 1, payload=b"p" * 40))),
    pb.ether(pb.ipv4("10.0.0.2", "10.9.0.1", pb.tcp(40001, 9092, 1, options=b"\x01" * 12, payload=b"q" * 9))),
    pb.ether(pb.ipv4("10.0.0.3", "10.9.0.1", pb.tcp(40002, 9092, 1), options=b"\x01" * 4)),
    pb.ether(pb.ipv4("10.0.0.4", "10.9.0.1", pb.tcp(40003, 9092, 1, payload=b"r" * 3)), vlans=((0x8100, 3),)),
]


@settings(max_examples=1000, deadline=None)
@example(base=_BASE_FRAMES[0], changes=[(46, 0x40)], keep=120)  # a TCP header of 16 bytes
@example(base=_BASE_FRAMES[0], changes=[(20, 0x20)], keep=120)  # more fragments follow
@example(base=_BASE_FRAMES[0], changes=[(16, 0), (17, 39)], keep=120)  # IP total length short of headers
@example(base=_BASE_FRAMES[1], changes=[(17, 50)], keep=120)  # TCP options past the IP total length
@given(
    base=st.sampled_from(_BASE_FRAMES),
    changes=st.lists(st.tuples(st.integers(0, 69), st.integers(0, 255)), max_size=4),
    keep=st.integers(0, 120),
)
def test_the_plain_packet_shortcut_only_takes_packets_the_decoder_reads_the_same(base, changes, keep):
    """The index's shortcut for plain Ethernet/IPv4/TCP packets never places a packet the decoder
    would not make a segment of, nor one of other endpoints (any other packet takes the decoder's path)."""
    frame = bytearray(base)
    for at, value in changes:
        if at < len(frame):
            frame[at] = value
    data = memoryview(bytes(frame[:keep]))
    key = plain_tcp_key(1, data)
    # as the pcap pass asks it: the packet's captured bytes inside a window of the file
    assert plain_tcp_key(1, b"h" * 16 + data + bytes(frame[keep:]), 16, len(data)) == key
    # and as the pcap pass's own loop asks it (written out there): a packet whose endpoints as
    # captured are known comes placed exactly when plain_tcp_key gives those endpoints
    blob = pb.pcap([(0, bytes(data), len(base))])
    known = {bytes(frame[26:38]): 5}
    records = list(index._PcapIndex(lambda n, at: blob[at : at + n], len(blob)).records(known))
    assert (records[1][4] == 5) == (key is not None and key in known)
    if key is None:
        return
    got = PacketDecoder(FragmentReassembler(10**9, 8)).decode(0, 0, 0, 1, data, len(base))
    assert type(got) is TcpSegment
    assert (got.src_ip, got.dst_ip) == (socket.inet_ntoa(key[:4]), socket.inet_ntoa(key[4:8]))
    assert (got.src_port, got.dst_port) == struct.unpack("!HH", key[8:12])


def test_the_shortcut_takes_plain_packets_with_and_without_tcp_options():
    """Most packets of a capture are these: the index pass places them without the decoder."""
    for frame, port in ((_BASE_FRAMES[0], 40000), (_BASE_FRAMES[1], 40001)):
        key = plain_tcp_key(1, memoryview(frame))
        assert key is not None
        assert (socket.inet_ntoa(key[:4]), socket.inet_ntoa(key[4:8])) == (f"10.0.0.{port - 39999}", "10.9.0.1")
        assert struct.unpack("!HH", key[8:12]) == (port, 9092)
