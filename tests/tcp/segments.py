"""Hand-made TCP segments for the tcp stage's tests, and what ``reassemble`` gives for them."""

from hypothesis import strategies as st

from kafka_protocol_source.capture import ACK, PSH, SYN, TcpSegment
from kafka_protocol_source.tcp import FlowEvent, StreamChunk, StreamGap, reassemble

C, S = ("10.0.0.1", 40000), ("10.0.0.2", 9092)
OTHER = ("10.0.0.9", 50000)  # another connection's packets: the capture going on meanwhile


def seg(seq, payload=b"", flags=ACK | PSH, src=C, dst=S, ts=0, index=0, missing=0, ack=0):
    return TcpSegment(ts, src[0], src[1], dst[0], dst[1], seq % 2**32, ack % 2**32, flags, payload, missing, index, 0)


def numbered(segments, start=0):
    """The segments with their packet indexes, as a capture numbers them."""
    return [s._replace(packet_index=start + i) for i, s in enumerate(segments)]


def elsewhere(n, start):
    """``n`` packets of another connection (its SYN, then a byte each), numbered from ``start``:
    its start is not provisional, so its bytes are delivered as they come."""
    return [seg(999, flags=SYN, src=OTHER, index=start)] + [
        seg(999 + i, b"z", src=OTHER, index=start + i) for i in range(1, n)
    ]


def run(segments, **kw):
    return list(reassemble(segments, **kw))


def stream_of(events, src=C):
    """Rebuild one direction as a list of bytes and ("gap", offset, length, reason) items."""
    out = []
    for e in events:
        if isinstance(e, StreamChunk) and (e.direction.src_ip, e.direction.src_port) == src:
            out.append(e.data)
        elif isinstance(e, StreamGap) and (e.direction.src_ip, e.direction.src_port) == src:
            out.append(("gap", e.offset, e.length, e.reason))
    return out


def joined(events, src=C):
    return b"".join(x for x in stream_of(events, src) if isinstance(x, bytes))


def kinds(events):
    return [e.kind for e in events if isinstance(e, FlowEvent)]


DATA = st.binary(min_size=1, max_size=3000)


@st.composite
def cut_stream(draw):
    data = draw(DATA)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=20))))
    bounds = [0] + [c for c in cuts if c < len(data)] + [len(data)]
    pieces = [(bounds[i], data[bounds[i] : bounds[i + 1]]) for i in range(len(bounds) - 1)]
    isn = draw(st.integers(0, 2**32 - 1))
    return data, pieces, isn
