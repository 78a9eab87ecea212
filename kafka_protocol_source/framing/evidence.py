"""What one side's held bytes say about which side of a connection is the client.

Owns counting, over bytes held while a connection is being decided (``held_side``): how many of
the ids of the requests chained from a start the other side answers, and whether a side that
alone spoke holds a run of responses. Does not own what a frame start is (``sniff``) nor the
decision drawn from these counts (``connection``).
"""

from __future__ import annotations

import itertools

from .held_side import HeldSide
from .sniff import CONFIRMED, chained_ids, request_ids_at, response_ids_at, response_start_check

# Responses in a row that make a side whose peer's bytes were not captured Kafka (one fewer when
# its SYN/ACK says it is the server).
MIN_RESPONSE_RUN = 3


def request_evidence(side: HeldSide, peer: HeldSide, start: int, max_frame_size: int) -> tuple[int, int, int]:
    """(ids ``peer`` answers, distinct ids, frames) of the requests ``side`` chains from ``start``."""
    head = side.data
    ids = chained_ids(head, start, lambda p: request_ids_at(head, p))
    other = peer.data
    responses = response_start_check(max_frame_size, lambda: ids)
    answered = set()  # ids of responses that start where the other side's packets start
    for at in sorted({0} | peer.chunk_ends):
        if at < len(other) and responses(other, at, True, peer.boundary) == CONFIRMED:
            answered.update(chained_ids(other, at, lambda p: response_ids_at(other, p)))
    return len(answered & set(ids)), len(set(ids)), len(ids)


def holds_responses(side: HeldSide, max_frame_size: int, serves: bool) -> bool:
    """Whether ``side`` holds a run of responses: frames chaining to a packet boundary from one of
    its packet starts, with ids counting up (``serves``: its SYN/ACK says it is the server, and
    one response fewer will do)."""
    head = side.data
    responses = response_start_check(max_frame_size, lambda: ())
    for start in sorted({0} | side.chunk_ends)[:64]:
        if start < len(head) and responses(head, start, True, side.boundary) == CONFIRMED:
            ids = chained_ids(head, start, lambda p: response_ids_at(head, p))
            if len(ids) >= MIN_RESPONSE_RUN - serves and all(0 < b - a <= 64 for a, b in itertools.pairwise(ids)):
                return True
    return False
