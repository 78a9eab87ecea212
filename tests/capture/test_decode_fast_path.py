"""``PacketDecoder.decode``'s fast path (Ethernet, IPv4 without options, one unpack) gives what the
general path gives: for every Ethernet IPv4 packet of the sample captures, and for such packets
with their header fields (version/IHL, lengths, fragment field, protocol, TCP data offset) and
their length changed at random, so that each of the fast path's conditions is met and missed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol_source.capture.decode import LINKTYPE_ETHERNET, PacketDecoder
from kafka_protocol_source.capture.fragments import FragmentReassembler
from kafka_protocol_source.capture.pcap import read_pcap_frames

from ..samples.catalog import SAMPLES


def _decoder() -> PacketDecoder:
    return PacketDecoder(FragmentReassembler(30 * 10**9, 1024))


def _ipv4_frames() -> list[tuple]:
    frames = []
    for path in sorted(SAMPLES.glob("*.pcap")):
        with open(path, "rb") as f:
            for item in read_pcap_frames(f.read, b""):
                if isinstance(item, tuple) and item[3] == LINKTYPE_ETHERNET and bytes(item[4][12:14]) == b"\x08\x00":
                    frames.append((*item[:4], bytes(item[4]), item[5]))
    return frames


FRAMES = _ipv4_frames()


def _both(frame: tuple):
    """(decode, the general path's reading of the same IPv4 packet), each by a fresh decoder."""
    index, offset, ts, linktype, data, orig_len = frame
    general = _decoder()._ipv4(memoryview(data), 14, len(data), orig_len, index, offset, ts)
    return _decoder().decode(index, offset, ts, linktype, memoryview(data), orig_len), general


def test_sample_packets_decode_as_the_general_path_reads_them():
    assert len(FRAMES) > 1000
    for frame in FRAMES:
        fast, general = _both(frame)
        assert fast == general


# Header bytes the fast path reads (offsets in the Ethernet frame) and values worth trying there.
_FIELDS = {
    14: st.sampled_from([0x45, 0x46, 0x44, 0x55, 0x65]),  # version / IHL
    16: st.integers(0, 0xFFFF),  # total length (two bytes)
    20: st.sampled_from([0x0000, 0x4000, 0x2000, 0x0001, 0x6000]),  # flags / fragment offset
    23: st.sampled_from([6, 17, 1]),  # protocol
    46: st.sampled_from([0x50, 0x40, 0x60, 0x80, 0xF0, 0x10]),  # TCP data offset
}


@settings(max_examples=400, deadline=None)
@given(
    pick=st.integers(0, len(FRAMES) - 1),
    changes=st.dictionaries(st.sampled_from(sorted(_FIELDS)), st.integers(0, 0xFFFF)),
    keep=st.integers(0, 1600),
    values=st.data(),
)
def test_changed_headers_decode_as_the_general_path_reads_them(pick, changes, keep, values):
    index, offset, ts, linktype, data, orig_len = FRAMES[pick]
    raw = bytearray(data[: max(keep, 14)])
    for at in changes:
        value = values.draw(_FIELDS[at])
        width = 2 if at in (16, 20) else 1
        if at + width <= len(raw):
            raw[at : at + width] = value.to_bytes(width, "big")
    fast, general = _both((index, offset, ts, linktype, bytes(raw), orig_len))
    assert fast == general
