"""Crafted captures through read_packets: formats, link layers, IP variants, cuts and issues."""

import io
import struct

import pytest

from kafka_protocol_source.capture import CaptureError, CaptureIssue, TcpSegment, detect_format, read_packets
from tests.capture import pcapbuild as b

T0 = 1_700_000_000_123_456_789
A, B = "10.0.0.1", "10.0.0.2"


def seg_frame(payload=b"hello", seq=1000, sport=40000, dport=9092, link=b.ether, v6=False, **ip):
    t = b.tcp(sport, dport, seq, flags=b.ACK | b.PSH, payload=payload)
    if v6:
        return (
            link(b.ipv6("fe80::1", "fe80::2", t, **ip), 0x86DD)
            if link is not None
            else b.ipv6("fe80::1", "fe80::2", t, **ip)
        )
    pkt = b.ipv4(A, B, t, **ip)
    return link(pkt) if link is not None else pkt


def read(data: bytes):
    return list(read_packets(io.BytesIO(data)))


def segments(items):
    return [x for x in items if isinstance(x, TcpSegment)]


def issues(items):
    return [x for x in items if isinstance(x, CaptureIssue)]


def test_microsecond_little_endian_pcap():
    items = read(b.pcap([(T0, seg_frame(b"abc")), (T0 + 1000, seg_frame(b"de", seq=1003))]))
    assert [(s.payload, s.seq, s.timestamp_ns, s.packet_index) for s in items] == [
        (b"abc", 1000, T0 - 789, 0),
        (b"de", 1003, T0 + 1000 - 789, 1),
    ]
    s = items[0]
    assert (s.src_ip, s.src_port, s.dst_ip, s.dst_port, s.missing, s.file_offset) == (A, 40000, B, 9092, 0, 24)


@pytest.mark.parametrize("big_endian", [False, True])
def test_nanosecond_pcap_keeps_nanoseconds(big_endian):
    (s,) = read(b.pcap([(T0, seg_frame())], nanos=True, big_endian=big_endian))
    assert s.timestamp_ns == T0 and s.payload == b"hello"


def test_big_endian_microsecond_pcap():
    (s,) = read(b.pcap([(T0, seg_frame())], big_endian=True))
    assert s.payload == b"hello" and s.timestamp_ns == T0 - 789


def test_ethernet_padding_is_not_payload():
    frame = seg_frame(b"") + b"\0" * 6  # short frames are padded to 60 bytes
    (s,) = read(b.pcap([(T0, frame)]))
    assert s.payload == b"" and s.missing == 0


@pytest.mark.parametrize("vlans", [((0x8100, 5),), ((0x88A8, 10), (0x8100, 20)), ((0x9100, 1), (0x8100, 2))])
def test_vlan_and_qinq(vlans):
    frame = b.ether(b.ipv4(A, B, b.tcp(1, 2, 3, payload=b"vlan")), vlans=vlans)
    (s,) = read(b.pcap([(T0, frame)]))
    assert s.payload == b"vlan"


@pytest.mark.parametrize(
    "linktype,link",
    [
        (113, b.sll),
        (276, b.sll2),
        (0, lambda p, et=0x0800: b.null(p, 2 if et == 0x0800 else 30, "<")),
        (0, lambda p, et=0x0800: b.null(p, 2 if et == 0x0800 else 24, ">")),
        (108, lambda p, et=0x0800: b.null(p, 2 if et == 0x0800 else 28, ">")),
    ],
)
@pytest.mark.parametrize("v6", [False, True])
def test_cooked_and_loopback_links(linktype, link, v6):
    (s,) = read(b.pcap([(T0, seg_frame(b"x", link=link, v6=v6))], linktype=linktype))
    assert s.payload == b"x" and s.src_ip == ("fe80::1" if v6 else A)


@pytest.mark.parametrize(("linktype", "link"), [(113, b.sll), (276, b.sll2)])
@pytest.mark.parametrize("v6", [False, True])
def test_vlan_tags_on_linux_cooked_links(linktype, link, v6):
    """libpcap puts back in a Linux cooked header the VLAN tag a NIC stripped (``-i any`` on a
    bridge or trunk): the protocol field says 802.1Q, and the tag comes before the IP header."""
    ip = seg_frame(b"tagged", link=None, v6=v6)
    tag = struct.pack("!HH", 7, 0x86DD if v6 else 0x0800)
    (s,) = read(b.pcap([(T0, link(tag + ip, 0x8100))], linktype=linktype))
    assert s.payload == b"tagged" and s.src_ip == ("fe80::1" if v6 else A)


@pytest.mark.parametrize("v6", [False, True])
def test_ip_under_an_mpls_label_stack_or_a_pppoe_session_header(v6):
    """A mirror port of a provider's link (MPLS) or a DSL one (PPPoE) hands over IP inside them."""
    ip = seg_frame(b"labelled", link=None, v6=v6)
    labels = struct.pack("!II", 16 << 12 | 64, 17 << 12 | 1 << 8 | 64)  # two labels, the second the bottom
    pppoe = struct.pack("!BBHHH", 0x11, 0, 1, len(ip) + 2, 0x0057 if v6 else 0x0021)
    for frame in (b.ether(labels + ip, ethertype=0x8847), b.ether(pppoe + ip, ethertype=0x8864)):
        (s,) = read(b.pcap([(T0, frame)]))
        assert s.payload == b"labelled" and s.src_ip == ("fe80::1" if v6 else A)


@pytest.mark.parametrize("control_word", [b"", b"\0\0\0\0"])
def test_ethernet_under_mpls_whose_mac_reads_as_ip_is_read_as_ethernet(control_word):
    """A pseudowire carries Ethernet under the label; a destination MAC such as GCP's 42:01:..
    begins like an IPv4 header, but not one of at least 5 words, and an IP ethertype follows."""
    label = struct.pack("!I", 16 << 12 | 1 << 8 | 64)
    inner = bytes.fromhex("42010a80000242010a800001") + b"\x08\x00" + seg_frame(b"pseudowire", link=None)
    (s,) = read(b.pcap([(T0, b.ether(label + control_word + inner, ethertype=0x8847))]))
    assert s.payload == b"pseudowire" and s.src_ip == A


@pytest.mark.parametrize("linktype", [101, 12, 14, 228, 229])
@pytest.mark.parametrize("v6", [False, True])
def test_raw_ip_links_by_version_nibble(linktype, v6):
    (s,) = read(b.pcap([(T0, seg_frame(b"raw", link=None, v6=v6))], linktype=linktype))
    assert s.payload == b"raw"


def test_unsupported_linktype_reported_once():
    items = read(b.pcap([(T0, b"\0" * 40)] * 3, linktype=147))
    assert [i.kind for i in items] == ["unsupported_linktype"]


def test_non_tcp_is_skipped():
    udp = b.ether(b.ipv4(A, B, b"\0" * 12, proto=17))
    arp = b.ether(b"\0" * 28, 0x0806)
    assert read(b.pcap([(T0, udp), (T0, arp)])) == []


def test_ipv4_options():
    (s,) = read(b.pcap([(T0, seg_frame(b"opt", options=b"\x01\x01\x01\x00" * 3))]))
    assert s.payload == b"opt"


def test_ipv6_extension_headers():
    ext = [(0, b"\x01\x04\0\0\0\0"), (43, b"\0" * 6), (60, b"\x01\x04\0\0\0\0" + b"\0" * 8), (51, b"\0" * 14)]
    (s,) = read(b.pcap([(T0, seg_frame(b"ext", v6=True, ext=ext))]))
    assert s.payload == b"ext" and s.dst_ip == "fe80::2"


def test_ipv6_atomic_fragment():
    (s,) = read(b.pcap([(T0, seg_frame(b"atom", v6=True, ext=[(44, struct.pack("!HI", 0, 7))]))]))
    assert s.payload == b"atom"


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1], [1, 2, 0, 1]])
def test_ipv4_fragments_reassembled_in_any_order(order):
    tcp = b.tcp(5, 6, 77, payload=bytes(range(200)))
    frags = b.ipv4_fragments(A, B, tcp, ident=0x1234, size=80)
    items = read(b.pcap([(T0 + i, b.ether(frags[k])) for i, k in enumerate(order)]))
    (s,) = segments(items)
    assert s.payload == bytes(range(200)) and s.seq == 77 and not issues(items)


def test_a_datagram_reusing_the_id_of_one_already_whole_is_reassembled_too():
    """Devices that send every datagram with id 0, and ids that wrap within the fragment timeout,
    make fragments of the same offsets and sizes under one id: not duplicates unless the bytes are."""
    first = b.ipv4_fragments(A, B, b.tcp(5, 6, 77, payload=b"a" * 200), ident=0, size=80)
    second = b.ipv4_fragments(A, B, b.tcp(5, 6, 277, payload=b"b" * 200), ident=0, size=80)
    frames = [*first, first[1], *second, second[2]]  # each with a duplicate of one fragment
    items = read(b.pcap([(T0 + i, b.ether(f)) for i, f in enumerate(frames)]))
    assert [(s.seq, s.payload) for s in segments(items)] == [(77, b"a" * 200), (277, b"b" * 200)]
    assert not issues(items)


def test_a_datagram_reusing_the_id_sent_last_fragment_first_with_the_same_bytes_is_reassembled():
    """Two responses with the same records under id 0, the second's fragments last first: all but
    its first fragment repeat the first datagram's bytes, so they look like duplicates until the
    first fragment, which differs (its TCP header), shows a new datagram."""
    first = b.ipv4_fragments(A, B, b.tcp(5, 6, 77, payload=b"r" * 200), ident=0, size=80)
    second = b.ipv4_fragments(A, B, b.tcp(5, 6, 277, payload=b"r" * 200), ident=0, size=80)
    frames = [*first, *reversed(second)]
    items = read(b.pcap([(T0 + i, b.ether(f)) for i, f in enumerate(frames)]))
    assert [(s.seq, s.payload) for s in segments(items)] == [(77, b"r" * 200), (277, b"r" * 200)]
    assert not issues(items)


def test_ipv6_fragments_reassembled():
    tcp = b.tcp(5, 6, 77, payload=b"six" * 50)
    frags = b.ipv6_fragments("2001:db8::1", "2001:db8::2", tcp, ident=99, size=64)
    (s,) = read(b.pcap([(T0, b.ether(f, 0x86DD)) for f in reversed(frags)]))
    assert s.payload == b"six" * 50 and s.src_ip == "2001:db8::1"


def test_incomplete_fragments_reported_at_end():
    frags = b.ipv4_fragments(A, B, b.tcp(5, 6, 77, payload=b"z" * 100), ident=5, size=64)
    items = read(b.pcap([(T0, b.ether(frags[0]))]))
    assert [i.kind for i in items] == ["fragment_incomplete"]


def test_fragment_timeout():
    f1 = b.ipv4_fragments(A, B, b.tcp(5, 6, 77, payload=b"z" * 100), ident=5, size=64)
    f2 = b.ipv4_fragments(A, B, b.tcp(5, 6, 77, payload=b"y" * 100), ident=6, size=64)
    items = list(
        read_packets(
            io.BytesIO(
                b.pcap([(T0, b.ether(f1[0])), (T0 + 5 * 10**9, b.ether(f2[0])), (T0 + 5 * 10**9, b.ether(f2[1]))])
            ),
            fragment_timeout_s=1,
        )
    )
    assert [type(x).__name__ for x in items] == ["CaptureIssue", "TcpSegment"]
    assert items[0].kind == "fragment_incomplete" and items[0].packet_index == 0


def test_snaplen_cut_segment_is_marked():
    frame = seg_frame(b"0123456789")
    items = read(b.pcap([(T0, frame[:-4], len(frame))], snaplen=len(frame) - 4))
    (s,) = items
    assert s.payload == b"012345" and s.missing == 4


@pytest.mark.parametrize("version", [4, 6])
def test_a_snaplen_cut_packet_whose_ip_length_is_0_is_as_long_as_the_packet_was(version):
    """Segmentation offload leaves the IP length 0 (IPv4 total, IPv6 payload length) in a
    capture on the sending host: the packet's original length says how long it is, so the bytes
    a snaplen cut are missing, as with the length filled in."""
    segment = b.tcp(40000, 9092, 1000, payload=b"0123456789")
    if version == 4:
        frame = b.ether(b.ipv4("10.0.0.1", "10.0.0.2", segment, total=0))
    else:
        ip = bytearray(b.ipv6("fd00::1", "fd00::2", segment))
        ip[4:6] = b"\0\0"
        frame = b.ether(bytes(ip), ethertype=0x86DD)
    (s,) = read(b.pcap([(T0, frame[:-4], len(frame))], snaplen=len(frame) - 4))
    assert s.payload == b"012345" and s.missing == 4


def test_a_snaplen_cut_inside_the_tcp_options_is_a_segment_whose_payload_is_all_missing():
    """``tcpdump -s 64`` over IPv4 with Linux's 12 bytes of TCP options: the ports, sequence
    numbers and flags are there, so the segment is, with none of its payload captured."""
    t = b.tcp(40000, 9092, 1000, flags=b.ACK | b.PSH, payload=b"0123456789", options=b"\x01\x01\x08\x0a" + b"\0" * 8)
    frame = b.ether(b.ipv4(A, B, t))
    (s,) = read(b.pcap([(T0, frame[:64], len(frame))], snaplen=64))
    assert (s.src_port, s.dst_port, s.seq, s.payload, s.missing) == (40000, 9092, 1000, b"", 10)


def test_snaplen_cut_inside_headers_is_an_issue():
    frame = seg_frame(b"0123456789")
    (i,) = read(b.pcap([(T0, frame[:40], len(frame))]))
    assert i.kind == "snaplen_cut"


def test_truncated_file_mid_record_keeps_earlier_packets():
    data = b.pcap([(T0, seg_frame(b"first")), (T0, seg_frame(b"second-packet", seq=1005))])
    items = read(data[:-5])
    assert [type(x).__name__ for x in items] == ["TcpSegment", "TcpSegment", "CaptureIssue"]
    assert items[1].payload == b"second-p" and items[1].missing == 5
    assert items[2].kind == "truncated_file" and items[2].packet_index == 1


def test_a_record_claiming_more_than_the_snaplen_is_corrupt_not_a_cut_last_record():
    """A bad length mid-file runs past the file's end as a cut last record would: a record
    may not claim more than the file's snaplen (or 256 KiB, when that is more), and one that
    does is said to be corrupt, its bytes (the records after it) not handed over as a packet."""
    data = bytearray(b.pcap([(T0, seg_frame(b"first")), (T0, seg_frame(b"second", seq=1005))] * 3))
    second = 24 + 16 + len(seg_frame(b"first"))
    struct.pack_into("<I", data, second + 8, 300_000)
    items = read(bytes(data))
    assert [type(x).__name__ for x in items] == ["TcpSegment", "CaptureIssue"]
    assert items[1].kind == "corrupt_file" and items[1].packet_index == 1
    assert "record claims 300000 captured bytes, more than the file's snaplen (262144) allows" in items[1].detail


def test_a_packet_block_whose_closing_length_is_not_its_length_is_corrupt_not_a_cut_last_block():
    frames = [("epb", 0, i, seg_frame(b"packet", seq=1000 + 6 * i)) for i in range(3)]
    data = bytearray(b.pcapng([(1, None, None, 65535)], frames, unknown_block=False))
    first_epb = data.index(struct.pack("<I", 6))
    length = struct.unpack_from("<I", data, first_epb + 4)[0]
    struct.pack_into("<I", data, first_epb + length + 4, 1 << 20)  # the second block's length
    items = read(bytes(data))
    assert [type(x).__name__ for x in items] == ["TcpSegment", "CaptureIssue"]
    assert items[1].kind == "corrupt_file"
    assert items[1].detail == f"block claims {1 << 20} bytes, but its closing length says {length}"


def test_truncated_file_inside_record_header():
    data = b.pcap([(T0, seg_frame(b"first")), (T0, seg_frame(b"x"))])
    cut = len(b.pcap([(T0, seg_frame(b"first"))])) + 7
    items = read(data[:cut])
    assert [type(x).__name__ for x in items] == ["TcpSegment", "CaptureIssue"]
    assert items[1].kind == "truncated_file"


def test_pcapng_two_interfaces_two_link_types_and_resolutions():
    interfaces = [(1, None, None, 0), (113, 9, None, 0), (101, 0x80 | 20, 100, 0)]
    packets = [
        ("epb", 0, T0 // 1000, seg_frame(b"eth")),
        ("epb", 1, T0, seg_frame(b"sll", link=b.sll)),
        ("epb", 2, 3 << 20, seg_frame(b"raw", link=None)),
        ("pb", 1, T0 + 5, seg_frame(b"old", link=b.sll)),
    ]
    for big in (False, True):
        items = read(b.pcapng(interfaces, packets, big_endian=big))
        assert [(s.payload, s.timestamp_ns, s.packet_index) for s in items] == [
            (b"eth", T0 - 789, 0),
            (b"sll", T0, 1),
            (b"raw", 100 * 10**9 + 3 * 10**9, 2),
            (b"old", T0 + 5, 3),
        ]


def test_pcapng_simple_packet_block_and_snaplen():
    frame = seg_frame(b"simple")
    (s,) = read(b.pcapng([(1, None, None, len(frame) - 2)], [("spb", 0, 0, frame[:-2], len(frame))]))
    assert s.payload == b"simp" and s.missing == 2 and s.timestamp_ns == 0


def test_pcapng_new_section_with_other_byte_order():
    one = b.pcapng([(1, None, None, 0)], [("epb", 0, 1, seg_frame(b"le"))])
    two = b.pcapng([(113, None, None, 0)], [("epb", 0, 2, seg_frame(b"be", link=b.sll))], big_endian=True)
    items = read(one + two)
    assert [s.payload for s in items] == [b"le", b"be"] and items[1].packet_index == 1


def test_pcapng_truncated_file():
    data = b.pcapng([(1, None, None, 0)], [("epb", 0, 1, seg_frame(b"a")), ("epb", 0, 2, seg_frame(b"bbbbbbbb"))])
    items = read(data[:-10])
    assert [type(x).__name__ for x in items] == ["TcpSegment", "TcpSegment", "CaptureIssue"]
    assert items[1].missing > 0 and items[-1].kind == "truncated_file"


@pytest.mark.parametrize("container", ["pcap", "pcapng"])
def test_gzip_detected_by_magic(tmp_path, container):
    raw = (
        b.pcap([(T0, seg_frame())])
        if container == "pcap"
        else b.pcapng([(1, None, None, 0)], [("epb", 0, 1, seg_frame())])
    )
    path = tmp_path / "capture.bin"  # deliberately no telling extension
    path.write_bytes(b.gz(raw))
    assert detect_format(path).container == container and detect_format(path).gzipped
    assert [s.payload for s in read_packets(path)] == [b"hello"]


def test_truncated_gzip_keeps_packets_and_reports():
    raw = b.pcap([(T0 + i, seg_frame(bytes([i]) * 300, seq=1000 + 300 * i)) for i in range(200)])
    gz = b.gz(raw)
    items = read(gz[: len(gz) // 2])
    assert len(segments(items)) > 10
    assert items[-1].kind == "truncated_file"


def test_not_a_capture_raises():
    with pytest.raises(CaptureError):
        read(b"hello world, not a capture")
    with pytest.raises(CaptureError):
        detect_format(io.BytesIO(b""))


def test_detect_format_rewinds_seekable():
    f = io.BytesIO(b.pcap([(T0, seg_frame())]))
    assert detect_format(f).container == "pcap" and f.tell() == 0


def test_read_in_many_chunks(monkeypatch):
    # Records straddling chunk boundaries must come out whole.
    import kafka_protocol_source.capture.pcap as pcap_mod
    import kafka_protocol_source.capture.pcapng as pcapng_mod

    monkeypatch.setattr(pcap_mod, "READ_SIZE", 7)
    monkeypatch.setattr(pcapng_mod, "READ_SIZE", 7)
    frames = [(T0 + i, seg_frame(bytes([i]) * i, seq=i)) for i in range(30)]
    assert [s.payload for s in read(b.pcap(frames))] == [bytes([i]) * i for i in range(30)]
    ng = b.pcapng([(1, 9, None, 0)], [("epb", 0, t, f) for t, f in frames])
    assert [s.payload for s in read(ng)] == [bytes([i]) * i for i in range(30)]


def test_a_record_claiming_a_huge_caplen_allocates_no_more_than_the_file_holds(tmp_path):
    import struct
    import tracemalloc

    from kafka_protocol_source.capture import CaptureIssue, read_packets

    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
    record = struct.pack("<IIII", 1, 0, (64 << 20) - 1, (64 << 20) - 1) + b"\x00" * 400  # claims ~64 MiB
    path = tmp_path / "claims.pcap"
    path.write_bytes(header + record)
    tracemalloc.start()
    try:
        items = list(read_packets(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert any(isinstance(i, CaptureIssue) for i in items)
    assert peak < 8 << 20  # a read chunk or two, never the claimed 64 MiB
