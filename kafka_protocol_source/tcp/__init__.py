"""TCP stage: capture-ordered segments in, ordered byte streams per connection direction out.

Public surface::

    reassemble(segments, *, max_buffered_bytes=16 MiB)
        -> Iterator[StreamChunk | StreamGap | StreamConflict | FlowEvent | CaptureIssue]
    ConnectionKey(a_ip, a_port, b_ip, b_port, instance)   # canonical endpoint order
    Direction(src_ip, src_port, dst_ip, dst_port)
    StreamChunk(conn, direction, offset, data, timestamp_ns, packet_index)   # one per packet
    StreamGap(conn, direction, offset, length, timestamp_ns, reason)
    StreamConflict(conn, direction, offset, length, timestamp_ns, packet_index)   # a retransmitted
        copy differed from the bytes taken (the first copy is kept)
    FlowEvent(conn, kind, timestamp_ns, direction, initiator, detail)
    connection_stats(segments) -> Iterator[ConnectionStats]   # per-connection packets, bytes,
        retransmissions (and those that differed), reordering, gaps, handshake RTT and ending
        (``stats``, which runs ``reassemble``; each connection's counts: ``sequence_analysis``)

Missing bytes are never spliced over: a `StreamGap` says how many and where, and the stream goes
on after it. Which side is the Kafka client is decided later; `FlowEvent.initiator` (who sent the
SYN, when seen) is only a hint. Imports only from `capture`.
"""

from .flows import DEFAULT_MAX_BUFFERED_BYTES, reassemble
from .model import ConnectionKey, Direction, FlowEvent, StreamChunk, StreamConflict, StreamGap

__all__ = [
    "DEFAULT_MAX_BUFFERED_BYTES",
    "ConnectionKey",
    "Direction",
    "FlowEvent",
    "StreamChunk",
    "StreamConflict",
    "StreamGap",
    "reassemble",
]
