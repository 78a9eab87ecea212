"""Test helper: Kafka conversations as TCP segments in crafted captures.

``Conversation`` collects size-prefixed frames per direction and lays them out as TCP segments
(optionally with a handshake, split into several segments, reordered, retransmitted or dropped),
then writes a pcap through ``tests.capture.pcapbuild``. Frames come from ``frames``: requests and
responses built by hand byte for byte, so what the capture holds is known exactly.
"""

from __future__ import annotations

import struct

from tests.capture import pcapbuild as pb

CLIENT, BROKER = ("10.0.0.1", 50000), ("10.0.0.2", 9092)


def string(s: str | None) -> bytes:
    if s is None:
        return b"\xff\xff"
    return struct.pack(">h", len(s)) + s.encode()


def metadata_v1_request(correlation_id: int, topics=("orders",), client_id="app") -> bytes:
    body = struct.pack(">i", len(topics)) + b"".join(string(t) for t in topics)
    return struct.pack(">hhi", 3, 1, correlation_id) + string(client_id) + body


def metadata_v1_response(correlation_id: int, topics=("orders",)) -> bytes:
    brokers = struct.pack(">i", 1) + struct.pack(">i", 1) + string("localhost") + struct.pack(">i", 9092) + string(None)
    topic_part = struct.pack(">i", len(topics)) + b"".join(
        struct.pack(">h", 0) + string(t) + b"\x00" + struct.pack(">i", 0) for t in topics
    )
    return struct.pack(">i", correlation_id) + brokers + struct.pack(">i", 1) + topic_part


def produce_v3_request(correlation_id: int, acks: int, records: bytes = b"") -> bytes:
    body = (
        string(None)
        + struct.pack(">hi", acks, 1000)
        + struct.pack(">i", 1)
        + string("orders")
        + struct.pack(">i", 1)
        + struct.pack(">i", 0)
        + struct.pack(">i", len(records))
        + records
    )
    return struct.pack(">hhi", 0, 3, correlation_id) + string("producer") + body


def produce_v3_response(correlation_id: int, base_offset: int = 0) -> bytes:
    partition = struct.pack(">ihqq", 0, 0, base_offset, -1)
    topic = string("orders") + struct.pack(">i", 1) + partition
    return struct.pack(">i", correlation_id) + struct.pack(">i", 1) + topic + struct.pack(">i", 0)


def sized(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


class Conversation:
    def __init__(self, client=CLIENT, broker=BROKER, handshake: bool = True, start_ns: int = 1_700_000_000 * 10**9):
        self.client, self.broker = client, broker
        self.handshake = handshake
        self.ns = start_ns
        self.seq = {client: 1000, broker: 5000}
        self.segments: list[tuple] = []  # ns, src, dst, seq, ack, flags, payload
        if handshake:
            self._segment(client, broker, pb.SYN, b"")
            self._segment(broker, client, pb.SYN | pb.ACK, b"")
            self.seq[client] += 1
            self.seq[broker] += 1

    def _segment(self, src, dst, flags, payload) -> None:
        ack = self.seq[dst] if flags & pb.ACK else 0  # everything the peer sent so far arrived
        self.segments.append((self.ns, src, dst, self.seq[src], ack, flags, payload))
        self.ns += 1_000_000  # 1 ms per segment

    def send(self, src, data: bytes, pieces: int = 1) -> None:
        dst = self.broker if src == self.client else self.client
        step = max(1, -(-len(data) // pieces))
        for i in range(0, len(data), step):
            self._segment(src, dst, pb.ACK | pb.PSH, data[i : i + step])
            self.seq[src] += len(data[i : i + step])

    def request(self, frame: bytes, pieces: int = 1) -> None:
        self.send(self.client, sized(frame), pieces)

    def response(self, frame: bytes, pieces: int = 1) -> None:
        self.send(self.broker, sized(frame), pieces)

    def pcap(self, order=None, drop=(), duplicate=()) -> bytes:
        idx = list(order) if order is not None else list(range(len(self.segments)))
        idx = [i for i in idx if i not in drop]
        for i in duplicate:
            idx.append(i)
        packets = []
        for n, i in enumerate(idx):
            _ns, src, dst, seq, ack, flags, payload = self.segments[i]
            frame = pb.ether(pb.ipv4(src[0], dst[0], pb.tcp(src[1], dst[1], seq, ack, flags=flags, payload=payload)))
            packets.append(
                (self.segments[i][0] if order is None else self.segments[min(n, len(self.segments) - 1)][0], frame)
            )
        return pb.pcap(packets, nanos=True)
