"""Retransmitted copies that differed from the bytes read, said in the note of the row holding them.

Owns the note's words and matching a conflict (the tcp stage's ``StreamConflict``: bytes of one
side came again, different; the first copy is the one read) to the exchange whose request or
response span covers its bytes, when that row is built. Pairing (``pairing``) decides which
conflicts can still find their row: those in bytes not yet cut into frames, or in a frame that
still waits (a request for its response, a response for its request). A conflict in bytes whose
row was given out before the differing copy came (most often a response retransmitted after it
was read: its row goes out as soon as it pairs) is in no row's note; the connections view
counts every conflict (``tcp.stats``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..capture import packet_number
from .model import Exchange

# Conflicts waiting for their row, per connection; older ones are given up (their rows were
# left out by the api or time filters, or went out before them).
WAITING_LIMIT = 256


@dataclass(frozen=True, slots=True)
class Conflict:
    """Bytes [offset, end) of the client side (``is_request``) or the broker side, and the note saying so."""

    is_request: bool
    offset: int
    end: int
    note: str


def conflict(is_request: bool, offset: int, length: int, packet: int | None) -> Conflict:
    """The conflict of ``length`` bytes at ``offset`` whose differing copy came in ``packet``
    (its index in its file), with its note."""
    side = "client" if is_request else "broker"
    where = f"stream byte {offset}" if length == 1 else f"stream bytes {offset}-{offset + length - 1}"
    number = "?" if packet is None else packet_number(packet)
    note = (
        f"a retransmitted copy (packet {number}) differed from the first copy at {where} of the"
        f" {side} side: the first copy was kept"
    )
    return Conflict(is_request, offset, offset + length, note)


def noted(rows: list[Exchange], waiting: list[Conflict]) -> list[Exchange]:
    """``rows``, each with the notes of the waiting conflicts its spans cover (those leave ``waiting``)."""
    out = []
    for row in rows:
        said = [c for c in waiting if overlaps(row.request_span if c.is_request else row.response_span, c)]
        if said:
            for c in said:
                waiting.remove(c)
            row = replace(row, note="; ".join(filter(None, (row.note, *(c.note for c in said)))))
        out.append(row)
    return out


def overlaps(span: tuple[int, int] | None, c: Conflict) -> bool:
    """Whether the stream bytes ``span`` (offset, length) hold any of the conflict's."""
    return span is not None and span[0] < c.end and c.offset < span[0] + span[1]
