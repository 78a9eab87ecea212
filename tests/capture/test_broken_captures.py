"""Captures broken after their magic: every problem ends the packets with a CaptureIssue (never an
exception, never the packets before it), and a length claimed by a broken header costs no memory
beyond the bytes that are really there."""

import gzip
import io
import struct
import tracemalloc

import pytest

from kafka_protocol_source.capture import CaptureIssue, TcpSegment, read_packets
from tests.capture import pcapbuild as b

T0 = 1_700_000_000_123_456_000
A, B = "10.0.0.1", "10.0.0.2"
PACKETS = 200


def frame(i: int) -> bytes:
    return b.ether(b.ipv4(A, B, b.tcp(40000, 9092, 1000 + 300 * i, flags=b.ACK | b.PSH, payload=bytes([i]) * 300)))


def pcap_of(n: int = PACKETS) -> bytes:
    return b.pcap([(T0 + i * 1000, frame(i)) for i in range(n)])


def record_end(i: int) -> int:
    """File offset just after record `i` of `pcap_of` (every record has the same length)."""
    return 24 + (i + 1) * (16 + len(frame(0)))


def read(data: bytes) -> list:
    return list(read_packets(io.BytesIO(data)))


def indices(items) -> list[int]:
    return [x.packet_index for x in items if isinstance(x, TcpSegment)]


def issues(items) -> list[tuple[str, int]]:
    return [(x.kind, x.packet_index) for x in items if isinstance(x, CaptureIssue)]


@pytest.mark.parametrize("length", [0, 13, 0xFFFFFFF0])
def test_pcapng_section_header_with_impossible_length_is_an_issue(length):
    data = bytearray(b.pcapng([(1, None, None, 0)], [("epb", 0, 1, frame(0))]))
    struct.pack_into("<I", data, 4, length)
    (issue,) = read(bytes(data))
    assert (issue.kind, issue.packet_index, issue.file_offset) == ("corrupt_file", 0, 0)
    assert str(length) in issue.detail


@pytest.mark.parametrize("keep", [4, 20])
def test_pcap_file_header_cut_short_is_an_issue(keep):
    (issue,) = read(pcap_of(1)[:keep])
    assert issue.kind == "truncated_file" and f"{keep} of 24" in issue.detail


@pytest.mark.parametrize("good", [4, 10, 24])
def test_gzip_corrupt_inside_the_file_header_is_an_issue(good):
    (issue,) = read(b.gz_corrupt_after(pcap_of(), good))
    assert issue.kind == "corrupt_file" and "compressed" in issue.detail


@pytest.mark.parametrize("inside", [0, 7, 80])
def test_gzip_corrupt_mid_stream_keeps_every_packet_before_it(inside):
    # Corrupt `inside` bytes into record 150: the 150 records before it are whole and come out.
    items = read(b.gz_corrupt_after(pcap_of(), record_end(149) + inside))
    segments = [x for x in items if isinstance(x, TcpSegment)]
    assert [s.missing for s in segments[:150]] == [0] * 150
    if inside == 80:  # into its payload: what there is of record 150 is handed on, the rest missing
        assert segments[150].packet_index == 150 and segments[150].payload and segments[150].missing
    assert indices(items) == list(range(150 + (inside == 80)))
    assert issues(items) == [("corrupt_file", 150)]
    assert "compressed" in items[-1].detail


def test_gzip_with_a_bad_checksum_keeps_every_packet_then_says_so():
    data = bytearray(gzip.compress(pcap_of()))
    data[-8:-4] = bytes(4 * [data[-8] ^ 0xFF])  # the CRC32 of the trailer
    items = read(bytes(data))
    assert indices(items) == list(range(PACKETS))
    assert issues(items) == [("corrupt_file", PACKETS)]


def test_gzip_cut_short_keeps_packets_and_names_the_compressed_stream():
    data = gzip.compress(pcap_of())
    items = read(data[: len(data) // 2])
    assert len(indices(items)) > 10
    assert items[-1].kind == "truncated_file" and "compressed stream ends early" in items[-1].detail


def test_gzip_members_and_zero_padding_read_as_one_stream():
    raw = pcap_of()
    data = gzip.compress(raw[:1001]) + gzip.compress(raw[1001:]) + b"\0" * 512
    items = read(data)
    assert indices(items) == list(range(PACKETS)) and issues(items) == []


def test_gzip_followed_by_garbage_keeps_every_packet_then_says_so():
    items = read(gzip.compress(pcap_of()) + b"not gzip at all")
    assert indices(items) == list(range(PACKETS))
    assert issues(items) == [("corrupt_file", PACKETS)]


class _FailingFile(io.RawIOBase):
    """A file whose reads fail (EIO) once `good` bytes were read."""

    def __init__(self, data: bytes, good: int):
        self._data, self._good, self._pos = data, good, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        if self._pos >= self._good:
            raise OSError(5, "Input/output error")
        n = min(len(buffer), self._good - self._pos)
        buffer[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


@pytest.mark.parametrize("compressed", [False, True])
def test_read_failure_mid_file_keeps_packets_and_is_an_issue(compressed):
    raw = pcap_of()
    data = gzip.compress(raw) if compressed else raw
    items = list(read_packets(_FailingFile(data, len(data) // 2)))
    assert len(indices(items)) > 10
    ((kind, _),) = issues(items)
    assert kind == "read_error" and "Input/output error" in items[-1].detail


def _peak_bytes(path) -> int:
    tracemalloc.start()
    try:
        items = list(read_packets(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert items and isinstance(items[-1], CaptureIssue)
    return peak


HUGE = (1 << 26) - 4  # just under the largest record the readers accept, and a multiple of 4


@pytest.mark.parametrize("compressed", [False, True])
def test_pcap_record_claiming_64_mib_allocates_only_what_is_there(tmp_path, compressed):
    data = bytearray(pcap_of(1) + b"\0" * 400)
    struct.pack_into("<I", data, 24 + 8, HUGE)  # caplen of record 0
    path = tmp_path / "huge_record.pcap"
    path.write_bytes(gzip.compress(bytes(data)) if compressed else bytes(data))
    assert _peak_bytes(path) < 8 << 20


@pytest.mark.parametrize("compressed", [False, True])
def test_pcapng_block_claiming_64_mib_allocates_only_what_is_there(tmp_path, compressed):
    good = b.pcapng([(1, None, None, 0)], [("epb", 0, 1, frame(0))], unknown_block=False)
    data = good + struct.pack("<II", 6, HUGE) + b"\0" * 400
    path = tmp_path / "huge_block.pcapng"
    path.write_bytes(gzip.compress(data) if compressed else data)
    assert _peak_bytes(path) < 8 << 20


def _blocks_then_a_good_packet(*blocks: bytes) -> bytes:
    head = b.pcapng([(1, None, None, 0)], [], unknown_block=False)
    tail = b.pcapng([(1, None, None, 0)], [("epb", 0, T0 // 1000, frame(7))], unknown_block=False)
    return head + b"".join(blocks) + tail


@pytest.mark.parametrize(
    "block",
    [
        struct.pack("<III", 1, 12, 12),  # interface description without its link type and snaplen
        struct.pack("<IIII", 1, 16, 0x00010001, 16),
        struct.pack("<IIHHIHHI", 1, 24, 1, 0, 0, 14, 8, 24),  # if_tsoffset option longer than the block
        struct.pack("<III", 6, 12, 12),  # enhanced packet block without its fixed fields
        struct.pack("<IIIIII", 6, 24, 0, 0, 0, 24),
        struct.pack("<III", 2, 12, 12),  # obsolete packet block, likewise
        struct.pack("<III", 3, 12, 12),  # simple packet block without its original length
    ],
    ids=["idb12", "idb16", "idb_option", "epb12", "epb24", "pb12", "spb12"],
)
def test_pcapng_block_shorter_than_its_fixed_fields_is_an_issue_and_reading_goes_on(block):
    items = read(_blocks_then_a_good_packet(block))
    assert [i.kind for i in items if isinstance(i, CaptureIssue)] == ["corrupt_file"]
    (segment,) = [s for s in items if isinstance(s, TcpSegment)]
    assert segment.payload == bytes([7]) * 300


@pytest.mark.parametrize("block", [struct.pack("<III", 6, 12, 12), struct.pack("<III", 2, 12, 12)], ids=["epb", "pb"])
def test_pcapng_short_packet_block_at_the_end_of_the_file_is_an_issue(block):
    items = read(b.pcapng([(1, None, None, 0)], [], unknown_block=False) + block)
    assert [i.kind for i in items] == ["corrupt_file"]
