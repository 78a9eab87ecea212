"""Captures of tunnelled traffic (mirror sessions, overlay networks) read as the traffic they carry.

Each capture here is a sample with every frame wrapped in a tunnel (VXLAN on both its ports,
Geneve, GRE bare and with its optional fields, ERSPAN types I to III, IP in IP, tunnels over
IPv6, a tunnel in a tunnel, GRE and IP-in-IP datagrams fragmented on the way). ``read_capture`` must give the
sample's exchanges with the inner addresses, and tshark must find in the wrapped capture every
Kafka PDU it finds in the sample (so the wrapping is one a reference dissector reads, not one
only our reader agrees with). Then the edges: what is not a tunnel stays unread, a cut tunnel
header is reported, raw and tunnelled copies of the same packets read once, and the index pass
places tunnelled packets by the connection inside.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kafka_protocol_source.capture import CaptureIssue, TcpSegment, read_packets
from kafka_protocol_source.capture.decode import MAX_TUNNEL_DEPTH
from kafka_protocol_source.pipeline import read_capture
from tests.tcp.test_interface_copies import ethernet_records

from . import pcapbuild as b
from .test_index import assert_split_reads_equal_whole

SAMPLE = Path(__file__).resolve().parents[2] / "sample_captures" / "tansu_confluent_kafka_all_codecs.pcap"
BROKER_PORT = 33325
OUTER = ("10.200.0.1", "10.200.0.2")  # the tunnel's endpoints
OUTER6 = ("fd00::1", "fd00::2")
TSHARK = shutil.which("tshark")


def over_ipv4(proto: int):
    return lambda payload: b.ether(b.ipv4(*OUTER, payload, proto=proto))


def over_ipv6(nh: int):
    return lambda payload: b.ether(b.ipv6(*OUTER6, payload, nh=nh), 0x86DD)


def ip_of(frame: bytes) -> bytes:
    return frame[14:]


# name -> how a sample's Ethernet frame is captured inside the tunnel
WRAPS = {
    "vxlan": lambda f: over_ipv4(17)(b.vxlan(f)),
    "vxlan_linux_port": lambda f: over_ipv4(17)(b.vxlan(f, vni=42, port=8472)),
    "vxlan_over_ipv6": lambda f: over_ipv6(17)(b.vxlan(f)),
    "geneve": lambda f: over_ipv4(17)(b.geneve(f, options=bytes(8))),
    "geneve_ip": lambda f: over_ipv4(17)(b.geneve(ip_of(f), protocol=0x0800)),
    "gre_ip": lambda f: over_ipv4(47)(b.gre(ip_of(f))),
    "gre_ip_all_fields": lambda f: over_ipv4(47)(b.gre(ip_of(f), checksum=True, key=5, seq=9)),
    "gre_ethernet": lambda f: over_ipv4(47)(b.gre(f, 0x6558, key=1)),
    "gre_over_ipv6": lambda f: over_ipv6(47)(b.gre(ip_of(f))),
    "erspan_1": lambda f: over_ipv4(47)(b.erspan(f, 1)),
    "erspan_2": lambda f: over_ipv4(47)(b.erspan(f, 2)),
    "erspan_3": lambda f: over_ipv4(47)(b.erspan(f, 3)),
    "erspan_3_subheader": lambda f: over_ipv4(47)(b.erspan(f, 3, subheader=True)),
    "ip_in_ip": lambda f: over_ipv4(4)(ip_of(f)),
    "gre_in_vxlan": lambda f: over_ipv4(17)(b.vxlan(over_ipv4(47)(b.gre(ip_of(f))))),
}


def wrapped(tmp_path: Path, wrap, name: str = "wrapped") -> Path:
    packets = []
    for ts, frame, orig in ethernet_records(SAMPLE):
        outer = wrap(frame)
        packets.append((ts, outer, orig + len(outer) - len(frame)))
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(b.pcap(packets))
    return path


def exchanges(path: Path) -> Counter:
    return Counter(
        (e.client_address, e.broker_address, e.api_key, e.api_version, e.correlation_id, e.status, e.request_size)
        for e in read_capture(str(path))
    )


def tshark_pdus(path: Path) -> Counter:
    """tshark's Kafka PDUs: (source, destination, correlation id) of each (inner addresses). VXLAN
    on the Linux port is decoded as such when asked (tshark knows only the IANA one)."""
    fields = ("ip.src", "tcp.srcport", "ip.dst", "tcp.dstport", "kafka.correlation_id")
    decode_as = ("-d", f"tcp.port=={BROKER_PORT},kafka", "-d", "udp.port==8472,vxlan")
    out = subprocess.run(
        [str(TSHARK), "-r", str(path), "-n", *decode_as, "-Y", "kafka", "-T", "fields", *(f"-e{f}" for f in fields)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # tshark lists every IP header of a packet: the last is the innermost
    return Counter(tuple(field.split(",")[-1] for field in line.split("\t")) for line in out.splitlines())


@pytest.fixture(scope="module")
def sample_exchanges() -> Counter:
    found = exchanges(SAMPLE)
    assert sum(found.values()) == 69
    return found


@pytest.mark.parametrize("name", list(WRAPS))
def test_a_tunnelled_capture_reads_as_the_traffic_it_carries(tmp_path, sample_exchanges, name):
    assert exchanges(wrapped(tmp_path, WRAPS[name])) == sample_exchanges


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
@pytest.mark.parametrize("name", list(WRAPS))
def test_tshark_reads_the_same_kafka_in_the_tunnelled_capture(tmp_path, name):
    want = tshark_pdus(SAMPLE)
    assert sum(want.values()) == 138
    assert tshark_pdus(wrapped(tmp_path, WRAPS[name])) == want


@pytest.mark.parametrize(("proto", "wrap"), [(47, lambda f: b.gre(f, 0x6558)), (4, ip_of)], ids=["gre", "ip_in_ip"])
def test_a_tunnel_datagram_fragmented_on_the_way_is_reassembled(tmp_path, sample_exchanges, proto, wrap):
    packets = []
    for i, (ts, frame, _) in enumerate(ethernet_records(SAMPLE)):
        datagram = wrap(frame)
        if len(datagram) > 200:
            packets += [(ts, b.ether(f)) for f in b.ipv4_fragments(*OUTER, datagram, ident=i, size=96, proto=proto)]
        else:
            packets.append((ts, over_ipv4(proto)(datagram)))
    path = tmp_path / "fragments.pcap"
    path.write_bytes(b.pcap(packets))
    assert exchanges(path) == sample_exchanges


def test_fragments_of_other_udp_are_not_held(tmp_path):
    """VXLAN and Geneve must not be fragmented, and a lost piece of a DNS answer is not ours to
    report: UDP fragments are skipped as they were, with no fragment_incomplete issue."""
    datagram = b.udp(53, 5353, bytes(400))
    first, *_ = b.ipv4_fragments(*OUTER, datagram, ident=1, size=96, proto=17)
    assert segments_and_issues(tmp_path, [b.ether(first)]) == []


def test_raw_and_tunnelled_copies_of_the_same_packets_read_once(tmp_path, sample_exchanges):
    """A node's `-i any`: the pod's traffic on its veth, and again in VXLAN on the uplink."""
    packets = []
    for ts, frame, orig in ethernet_records(SAMPLE):
        outer = WRAPS["vxlan"](frame)
        packets += [(ts, 0, frame, orig), (ts + 20_000, 1, outer, orig + len(outer) - len(frame))]
    packets.sort(key=lambda p: (p[0], p[1]))
    path = tmp_path / "both.pcapng"
    path.write_bytes(
        b.pcapng([(1, 9, None, 0), (1, 9, None, 0)], [("epb", iface, ts, f, orig) for ts, iface, f, orig in packets])
    )
    assert exchanges(path) == sample_exchanges


@pytest.mark.parametrize("count", [2, 3])
def test_the_index_pass_places_tunnelled_packets_by_the_connection_inside(tmp_path, count):
    path = wrapped(tmp_path, WRAPS["vxlan"])
    assert_split_reads_equal_whole(path, count)


SEGMENT = b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(40000, 9092, 1, payload=b"kafka")))


def segments_and_issues(tmp_path: Path, frames: list[bytes], snaplen: int | None = None) -> list:
    packets = [(i * 1000, f[:snaplen], len(f)) for i, f in enumerate(frames)]
    path = tmp_path / "frames.pcap"
    path.write_bytes(b.pcap(packets))
    return list(read_packets(path))


@pytest.mark.parametrize(
    "frame",
    [
        over_ipv4(17)(b.udp(5353, 53, SEGMENT)),  # UDP on another port
        over_ipv4(17)(b.vxlan(SEGMENT, flags=0)),  # VXLAN's I flag unset
        over_ipv4(17)(b.geneve(SEGMENT, version=1)),  # a Geneve version we do not know
        over_ipv4(17)(b.geneve(SEGMENT, protocol=0x88CC)),  # Geneve carrying something else
        over_ipv4(47)(struct.pack("!HH", 0x0001, 0x880B) + SEGMENT[14:]),  # GRE version 1 (PPTP)
        over_ipv4(47)(b.gre(SEGMENT, 0x88CC)),  # GRE carrying something else
        over_ipv4(47)(b.gre(struct.pack("!HHI", 3 << 12, 0, 0) + SEGMENT, 0x88BE, seq=1)),  # ERSPAN II, bad version
        over_ipv4(47)(b.gre(bytes(10) + b"\x04\x00" + SEGMENT, 0x22EB, seq=1)),  # ERSPAN III header of version 0
    ],
    ids=["udp", "vxlan_no_vni", "geneve_v1", "geneve_lldp", "gre_v1", "gre_lldp", "erspan_2_bad", "erspan_3_bad"],
)
def test_what_is_not_a_tunnel_we_read_is_skipped_quietly(tmp_path, frame):
    assert segments_and_issues(tmp_path, [frame]) == []


@pytest.mark.parametrize(
    ("cut_at", "where"),
    [(14 + 20 + 12, "tunnel header"), (14 + 20 + 16 + 14 + 20 + 10, "TCP header")],
    ids=["in_the_vxlan_header", "in_the_inner_tcp_header"],
)
def test_headers_cut_by_the_snaplen_are_reported_as_cut(tmp_path, cut_at, where):
    got = segments_and_issues(tmp_path, [WRAPS["vxlan"](SEGMENT)], snaplen=cut_at)
    assert [(type(x), x.kind) for x in got] == [(CaptureIssue, "snaplen_cut")]
    assert where in got[0].detail


def test_a_tunnelled_packet_cut_by_the_snaplen_keeps_what_was_captured(tmp_path):
    frame = WRAPS["gre_in_vxlan"](SEGMENT)
    (got,) = segments_and_issues(tmp_path, [frame], snaplen=len(frame) - 2)
    assert type(got) is TcpSegment and (got.src_port, got.dst_port) == (40000, 9092)
    assert (got.payload, got.missing) == (b"kaf", 2)


def test_tunnels_are_read_only_so_deep(tmp_path):
    def nested(depth: int) -> bytes:
        frame = SEGMENT
        for _ in range(depth):
            frame = WRAPS["vxlan"](frame)
        return frame

    got = segments_and_issues(tmp_path, [nested(MAX_TUNNEL_DEPTH), nested(MAX_TUNNEL_DEPTH + 1)])
    assert [(type(x), x.packet_index, x.payload) for x in got] == [(TcpSegment, 0, b"kafka")]
