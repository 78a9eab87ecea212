"""What the command says when a capture holds no Kafka: no TCP at all (a filter or a tunnel kept
it out), or TCP that did not look like Kafka (name the ports), or rows that say what went wrong."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_protocol_source.cli import views
from kafka_protocol_source.cli.views import Summary, no_kafka_message
from tests.capture import pcapbuild as b

NOTHING = Summary(exchanges=0, kafka=0, connections=0, not_ok=0, first=None, last=None, problem=None)
DNS = b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.udp(5353, 53, b"query"), proto=17))
HTTP = b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(40000, 80, 1, payload=b"GET / HTTP/1.1\r\n\r\n")))
UNREAD_TUNNEL = b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.udp(40000, 4790, HTTP), proto=17))  # VXLAN-GPE


def capture(tmp_path, name: str, frames: list[bytes]) -> str:
    path = tmp_path / name
    path.write_bytes(b.pcap([(i * 1000, f) for i, f in enumerate(frames)]))
    return str(path)


def message(files: list[str], summary: Summary = NOTHING) -> str:
    return no_kafka_message(files, summary, "9092", files)


def test_a_capture_without_tcp_says_so_and_how_to_capture_kafka(tmp_path):
    files = [capture(tmp_path, "dns.pcap", [DNS] * 3), capture(tmp_path, "gpe.pcap", [UNREAD_TUNNEL])]
    got = message(files)
    assert got.startswith(f"no Kafka traffic in {', '.join(files)}: no TCP in it. ")
    assert "VXLAN" in got and "'tcp port 9092 or udp port 4789'" in got


def test_tcp_that_is_not_kafka_asks_for_the_brokers_ports(tmp_path):
    files = [capture(tmp_path, "dns.pcap", [DNS]), capture(tmp_path, "http.pcap", [DNS, HTTP])]
    assert "no connection looked like Kafka (broker ports 9092" in message(files)


def test_tcp_that_is_not_kafka_names_the_server_ports_seen(tmp_path):
    """The ports to try: where a SYN went, else the lower port of a connection (a capture joined
    mid-stream); the busiest first. With detection off, the message does not claim it ran."""
    syn = b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.tcp(40001, 33325, 1, flags=b.SYN)))
    mid = [b.ether(b.ipv4("10.0.0.2", "10.0.0.1", b.tcp(33325, 40000 + n, 1, payload=b"x"))) for n in range(2, 5)]
    files = [capture(tmp_path, "a.pcap", [syn, *mid, HTTP])]
    got = message(files)
    assert got.endswith(
        "name the brokers' ports with --ports (TCP servers seen on ports 33325 (4 connections), 80 (1 connection):"
        " --ports 33325, say)"
    ), got
    assert "others found by decoding first requests" in got
    off = no_kafka_message(files, NOTHING, "9093", files, SimpleNamespace(detect_kafka=False))
    assert "(broker ports 9093, no others looked at: detectKafka=false)" in off


def test_tcp_inside_a_tunnel_we_read_is_tcp(tmp_path):
    vxlan = b.ether(b.ipv4("10.0.0.1", "10.0.0.2", b.vxlan(HTTP), proto=17))
    assert "no connection looked like Kafka" in message([capture(tmp_path, "vxlan.pcap", [vxlan])])


def test_only_the_start_of_a_large_file_is_looked_at(tmp_path, monkeypatch):
    monkeypatch.setattr(views, "SCANNED_BYTES", 1 << 20)
    late_tcp = capture(tmp_path, "late.pcap", [DNS] * ((1 << 20) // (16 + len(DNS)) + 1) + [HTTP])
    assert message([late_tcp]).startswith(f"no Kafka traffic in {late_tcp}: no TCP in it (in its first 1 MiB). ")
    early_tcp = capture(tmp_path, "early.pcap", [HTTP] + [DNS] * ((1 << 20) // (16 + len(DNS)) + 1))
    assert "no connection looked like Kafka" in message([early_tcp])


@pytest.mark.parametrize("content", [b"\0\0\0\x05hello", b"not a capture"], ids=["stream_dump", "text"])
def test_a_file_that_is_not_a_capture_is_not_said_to_lack_tcp(tmp_path, content):
    path = tmp_path / "other.bin"
    path.write_bytes(content)
    assert "no TCP" not in message([str(path)])


def test_rows_that_are_not_kafka_are_what_the_message_shows(tmp_path):
    rows = Summary(exchanges=1, kafka=0, connections=0, not_ok=1, first=None, last=None, problem="capture_error: x")
    assert message([capture(tmp_path, "dns.pcap", [DNS])], rows).endswith("(1 row, e.g. capture_error: x)")


def test_a_folder_of_files_none_a_capture_is_said_before_spark_starts(tmp_path):
    """Each would be a capture_error row: a minute of Spark said so. One capture (or stream dump)
    among them is enough to read."""
    from kafka_protocol_source.cli.app import NothingToRead, _some_readable

    options = SimpleNamespace(max_frame_size=100 * 2**20)
    notes = [tmp_path / f"notes-{n}.log" for n in range(5)]
    for f in notes:
        f.write_text("not a capture\n")
    files = [str(f) for f in notes]
    with pytest.raises(NothingToRead) as said:
        _some_readable([str(tmp_path)], files, options)
    assert str(said.value).startswith(f"no Kafka traffic in {tmp_path}: no file is a capture: {files[0]}: not a pcap")
    assert str(said.value).endswith("(and 2 more files)")
    _some_readable([str(tmp_path)], [*files, capture(tmp_path, "http.pcap", [HTTP])], options)
    dump = tmp_path / "dump.bin"
    dump.write_bytes(b"\0\0\0\x05hello" * 3)
    _some_readable([str(tmp_path)], [*files, str(dump)], options)
