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
    asks=st.lists(
        st.tuples(st.sampled_from([(0, 3), (1, 4), (3, 1), (18, 3)]), st.integers(0, 2**31 - 1)),
        min_size=1,
        max_size=4,
    ),
    answers=st.lists(st.binary(min_size=60, max_size=300), min_size=1, max_size=4),
)
def test_headers_the_snaplen_cut_are_not_kafka_unless_the_other_side_answers_their_ids(asks, answers, tmp_path):
    """A request header of a known api, with a text client id, runs into the cut: what the capture
    has of it would pass for Kafka, so the peer's frames must answer its correlation id."""
    c = Conversation(broker=("10.0.0.2", 7000))
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
