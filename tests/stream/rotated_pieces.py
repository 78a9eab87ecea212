"""Sample captures cut into rotated pieces (``tcpdump -C`` by packets, ``-G`` by time), and the
key their exchanges are compared by: the streaming and folder tests' shared inputs."""

from __future__ import annotations

from collections import Counter

from kafka_protocol_source import read_capture
from tests.cuts import Cut, pieces, segments_of
from tests.samples.catalog import sample

SAMPLES = ("tansu_confluent_kafka_all_codecs", "mock_kafka_python_all_codecs")


def exchange_key(r):
    return r.api_key, r.api_version, r.correlation_id, r.client_id, r.status


def by_time(segments, count: int) -> list[Cut]:
    """``count`` pieces covering equal spans of capture time (``tcpdump -G`` style)."""
    first, last = segments[0].timestamp_ns, segments[-1].timestamp_ns
    step = (last - first) / count + 1
    out = [[] for _ in range(count)]
    for s in segments:
        out[min(count - 1, int((s.timestamp_ns - first) / step))].append(s)
    return [Cut(tuple(p)) for p in out if p]


def rotated_pieces(tmp_path, name: str, how: str, count: int) -> tuple[list, Counter]:
    s = sample(name)
    segments = segments_of(s.path)
    cuts = pieces(segments, count) if how == "packets" else by_time(segments, count)
    src = tmp_path / f"{name}-{how}-{count}"
    src.mkdir()
    files = [c.write(src / f"k-{i:02d}.pcap") for i, c in enumerate(cuts)]
    whole = Counter(exchange_key(e) for e in read_capture(s.path, ports=[s.broker_port]))
    return files, whole
