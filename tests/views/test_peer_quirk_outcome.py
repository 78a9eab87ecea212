"""``outcome`` is ``peer_quirk`` only when a known quirk explains everything that went wrong.

librdkafka's mock cluster appends bytes to ApiVersions v3 and Metadata v13 answers, and clients
ignore them: such a row is ``malformed`` (the frame does not match the spec) but did what was
asked. A padded ApiVersions v0 request (a known quirk) beside an answer with bytes nothing
explains is not (found by review, /tmp/rev13/quirk_masks.py).
"""

from __future__ import annotations

import struct

from kafka_protocol_source import read_capture
from kafka_protocol_source.framing.exchange_build import deviation_error
from kafka_protocol_source.framing.quirks import KNOWN, explained
from kafka_protocol_source.views.exchanges import exchange_row
from tests.framing.kafkaflow import Conversation, string


def test_a_padded_request_does_not_excuse_an_answer_nothing_explains(tmp_path):
    c = Conversation()
    c.request(struct.pack(">hhi", 18, 0, 1) + string("rdkafka") + bytes(4))  # the known padding
    c.response(struct.pack(">ih", 1, 0) + struct.pack(">i", 1) + struct.pack(">hhh", 3, 0, 1) + b"\xde\xad\xbe")
    c.request(struct.pack(">hhi", 18, 0, 2) + string("rdkafka") + bytes(4))
    c.response(struct.pack(">ih", 2, 0) + struct.pack(">i", 1) + struct.pack(">hhh", 3, 0, 1))
    path = tmp_path / "padded.pcap"
    path.write_bytes(c.pcap())
    rows = [exchange_row(e) for e in read_capture(path)]
    assert [(r["correlation_id"], r["status"], r["outcome"]) for r in rows] == [
        (1, "malformed", "malformed"),
        (2, "malformed", "peer_quirk"),
    ]


def test_explained_reads_the_errors_deviation_error_writes():
    padded = next(q for q in KNOWN if q.side == "request")
    answer = next(q for q in KNOWN if q.side == "response" and q.kind == "trailing_bytes")
    request_error = deviation_error("request", {"trailing_bytes": 4})
    both = f"{request_error}; {deviation_error('response', {'trailing_bytes': 3, 'deviations': ['null in x']})}"
    assert explained(request_error, padded.note)
    assert not explained(both, padded.note)
    assert explained(both, f"{padded.note}; {answer.note}")
    assert not explained(f"{request_error}; response could not be read", padded.note)
    assert not explained(request_error, None) and not explained(None, padded.note)
