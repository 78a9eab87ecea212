"""Values the tcp stage hands to the framing stage: chunks, gaps, conflicts and connection events.

Owns: the shape of what `reassemble` yields. Does not own the reassembly itself (`stream`,
`flows`) or any idea of which side is the Kafka client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..capture.model import fast_constructor


class ConnectionKey(NamedTuple):
    """One TCP connection: its endpoints in a canonical order plus an instance number.

    `instance` counts connections on the same 4-tuple (0 for the first), so a 4-tuple reused
    after FIN/RST, or by a SYN with a new ISN, gets a new key. A named tuple, not a dataclass:
    the pipeline looks a connection up by it for every chunk, and a tuple hashes and compares in C.
    """

    a_ip: str
    a_port: int
    b_ip: str
    b_port: int
    instance: int


class Direction(NamedTuple):
    """One direction of a connection: bytes flow from (src_ip, src_port) to (dst_ip, dst_port).

    A named tuple, as ``ConnectionKey`` is: the framing stage keys dicts by it and compares it with
    the client side for every chunk."""

    src_ip: str
    src_port: int
    dst_ip: str
    dst_port: int


class StreamChunk(NamedTuple):
    """In-order bytes of one direction, as carried by one packet (a named tuple, as ``TcpSegment``
    is: one is made for every packet with a payload).

    `offset` is the stream offset of data[0] (0 = first byte after the SYN, or the first byte seen
    when the capture started mid-connection); `timestamp_ns` and `packet_index` are those of the
    packet that carried these bytes.
    """

    conn: ConnectionKey
    direction: Direction
    offset: int
    data: bytes
    timestamp_ns: int
    packet_index: int


@dataclass(frozen=True, slots=True)
class StreamGap:
    """Bytes [offset, offset + length) of one direction that the capture does not have.

    reason: "missing" (never captured), "snaplen_cut" (cut off a captured packet) or "overflow"
    (given up when the out-of-order buffer hit its cap). Streams continue after a gap; bytes on
    either side are never spliced together silently.
    """

    conn: ConnectionKey
    direction: Direction
    offset: int
    length: int
    timestamp_ns: int
    reason: str


@dataclass(frozen=True, slots=True)
class StreamConflict:
    """Bytes [offset, offset + length) of one direction came again, in the packet numbered
    ``packet_index``, different from the copy already taken: the first copy is what the stream
    holds (as tshark keeps it; Wireshark's "Conflicting data in segment overlap").

    The span runs from the first to the last byte that differed. Said once per packet that
    brought a differing copy; only bytes the stream still held could be compared (see ``stream``).
    """

    conn: ConnectionKey
    direction: Direction
    offset: int
    length: int
    timestamp_ns: int
    packet_index: int


@dataclass(frozen=True, slots=True)
class FlowEvent:
    """Something that happened to a connection.

    kind: "open" (first packet seen; `initiator` is the direction of whoever sent the SYN, None if
    no SYN was seen), "fin" and "reset" (from `direction`'s sender), "overflow" (that direction's
    out-of-order buffer hit the cap and was flushed with gaps), "close" (no more events for this
    key; `detail` says why: "fin", "reset", "reused" or "end_of_capture").
    """

    conn: ConnectionKey
    kind: str
    timestamp_ns: int
    direction: Direction | None = None
    initiator: Direction | None = None
    detail: str = ""


# Several per connection (open, fin, fin, close): without the frozen __init__ (see fast_constructor).
new_flow_event = fast_constructor(FlowEvent)
