"""Finding Kafka on an unconfigured port in a capture taken with a small snaplen.

``tcpdump -s 128`` keeps each packet's headers and the first bytes of its payload: every frame
longer than that is cut, so no frame's bytes are all there to check, and a connection of two
short exchanges never shows a whole one. What a cut packet still says is its length: the frame
sizes lead from one packet start to the next. Reading the capture without ``ports`` must find the
same connections, and give the same rows, as naming the broker's port does.
"""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source import read_capture
from tests.accounting import check_accounting
from tests.samples.catalog import samples

from .kafkaflow import Conversation, string

CAPTURES = [s for s in samples() if s.path.suffix in (".pcap", ".pcapng")]


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark tools) not installed")
@pytest.mark.parametrize("snaplen", [96, 128, 200])
@pytest.mark.parametrize("s", CAPTURES, ids=lambda s: s.name)
def test_a_snaplen_cut_capture_is_found_to_be_kafka_without_ports(s, snaplen, tmp_path):
    cut = tmp_path / f"s{snaplen}.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", str(snaplen), str(s.path), str(cut)], check=True)
    named = list(read_capture(cut, ports=[s.broker_port]))
    assert any(e.status == "gap" for e in named), "the snaplen cuts some frames"
    found = list(read_capture(cut, ports=()))
    assert [e.connection_id for e in found] == [e.connection_id for e in named]
    assert found == named
    assert check_accounting(cut, ports=()) == []


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark tools) not installed")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    apis=st.lists(st.sampled_from([(0, 3), (1, 4), (3, 1), (18, 3)]), min_size=1, max_size=4),
    first_id=st.integers(0, 2**31 - 10),
    answers=st.lists(st.binary(min_size=60, max_size=300), min_size=1, max_size=4),
)
def test_headers_the_snaplen_cut_are_not_kafka_unless_the_other_side_answers_their_ids(
    apis, first_id, answers, tmp_path
):
    """Request headers of known apis, with a text client id and counting correlation ids, run into
    the cut: what the capture has of them would pass for Kafka, so the peer's frames must answer
    their correlation ids."""
    c = Conversation(broker=("10.0.0.2", 7000))
    asks = [(api, first_id + i) for i, api in enumerate(apis)]
    ids = {correlation_id for _, correlation_id in asks}
    for (api, version), correlation_id in asks:
        c.request(struct.pack(">hhi", api, version, correlation_id) + string("client-app") + bytes(200))
    for answer in answers:
        if struct.unpack_from(">i", answer)[0] not in ids:
            c.response(answer)
    whole, cut = tmp_path / "whole.pcap", tmp_path / "cut.pcap"
    whole.write_bytes(c.pcap())
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", "96", str(whole), str(cut)], check=True)
    assert list(read_capture(cut, ports=())) == []
    c.response(struct.pack(">i", asks[0][1]) + bytes(200))  # an answer to the first
    whole.write_bytes(c.pcap())
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", "96", str(whole), str(cut)], check=True)
    assert list(read_capture(cut, ports=()))


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark tools) not installed")
@pytest.mark.parametrize("handshake", [True, False])
def test_zookeeper_cut_by_the_snaplen_is_not_kafka(handshake, tmp_path):
    """ZooKeeper beside the brokers, captured with ``-s 96`` (found by review, /tmp/rev13): its
    ConnectRequest reads as a Produce v0 header with correlation id 0 and no client id, answered
    by "correlation id 0"; its getData requests as Produce v1, v2, v3 ... all with id 4."""
    c = Conversation(client=("10.0.0.5", 41000), broker=("10.0.0.9", 2181), handshake=handshake)
    c.request(struct.pack(">iqiq", 0, 0, 30000, 0) + struct.pack(">i", 16) + bytes(16) + b"\x00")
    c.response(struct.pack(">iiq", 0, 30000, 0x1000ABCDEF01234) + struct.pack(">i", 16) + bytes(range(16)) + b"\x00")
    for xid in range(1, 6):
        path = f"/brokers/topics/orders-{xid}/partitions/0/state".encode()
        c.request(struct.pack(">ii", xid, 4) + struct.pack(">i", len(path)) + path + b"\x01")
        data = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}'
        c.response(struct.pack(">iqi", xid, 0x100 + xid, 0) + struct.pack(">i", len(data)) + data + bytes(68))
    whole, cut = tmp_path / "zk.pcap", tmp_path / "zk96.pcap"
    whole.write_bytes(c.pcap())
    subprocess.run(["editcap", "-F", "nsecpcap", "-s", "96", str(whole), str(cut)], check=True)
    assert list(read_capture(cut, ports=())) == []


def test_a_gap_longer_than_a_mebibyte_does_not_hide_the_kafka_after_it(tmp_path):
    """A piece of a large Produce request lost: the Metadata exchanges after it are found without
    ports (the gap's stand-in bytes filled what detection holds, found by review)."""
    from tests.framing.kafkaflow import metadata_v1_request, metadata_v1_response, produce_v3_request

    c = Conversation(broker=("10.0.0.2", 7000))
    big = produce_v3_request(1, acks=1, records=bytes(1_300_000))
    c.request(big, pieces=1000)
    for n in range(2, 22):
        c.request(metadata_v1_request(n))
        c.response(metadata_v1_response(n))
    lost = set(range(10, 900))  # segments of the big request, after the handshake
    path = tmp_path / "lost.pcap"
    path.write_bytes(c.pcap(drop=lost))
    found = [e for e in read_capture(path, ports=()) if e.status == "ok"]
    assert len(found) == 20 == len([e for e in read_capture(path, ports=[7000]) if e.status == "ok"])
