"""IP fragment reassembly, bounded in count and in capture time.

Owns: collecting IPv4 fragments keyed by (src, dst, id, proto) and IPv6 fragments keyed by
(src, dst, id) until a datagram is whole, first-seen bytes winning where fragments overlap; a
fragment that repeats one of a datagram already whole, bytes and all, is a duplicate, unless a
next datagram under the id (devices that send id 0, ids that wrap) turns out to have sent it.
Datagrams that time out, are evicted by the group cap, or are still open at the end of the capture
become `fragment_incomplete` issues. Does not parse what the datagram carries (see `decode`).
"""

from __future__ import annotations

from .model import CaptureIssue

MAX_DATAGRAM = 65535
MAX_ECHOES = 64  # fragments repeating a datagram already whole, kept per id


class _Group:
    __slots__ = (
        "done",
        "echoes",
        "first_index",
        "first_offset",
        "first_ts",
        "nbytes",
        "pieces",
        "poisoned",
        "proto",
        "total",
    )

    def __init__(self, ts: int, index: int, offset: int) -> None:
        self.pieces: list[tuple[int, bytes]] = []
        self.total: int | None = None
        self.proto: int | None = None
        self.first_ts = ts
        self.first_index = index
        self.first_offset = offset
        self.nbytes = 0
        self.poisoned = False
        # After completion: the (offset, hash of the bytes) of its fragments, so that duplicates
        # are absorbed and a datagram reusing the id (devices that send id 0, ids that wrap
        # within the timeout) is not taken for them.
        self.done: frozenset | None = None
        # After completion: the fragments that repeated one of it, which a next datagram under the
        # id may turn out to have sent (its fragments in any order, some bytes as the last one's).
        self.echoes: list = []  # (offset, bytes, more) while done; (offset, bytes) in a next datagram


class FragmentReassembler:
    """Holds open datagrams; issues found along the way are appended to `issues` for the reader."""

    def __init__(self, timeout_ns: int, max_groups: int) -> None:
        self._timeout_ns = timeout_ns
        self._max_groups = max_groups
        self._groups: dict[tuple, _Group] = {}
        self.issues: list[CaptureIssue] = []

    def _report(self, key: tuple, g: _Group, why: str) -> None:
        if not g.poisoned and g.done is None:
            have = sum(len(p) for _, p in g.pieces)
            self.issues.append(
                CaptureIssue(
                    g.first_index,
                    g.first_offset,
                    "fragment_incomplete",
                    f"IPv{key[0]} datagram id {key[3]:#x}: {why} with {len(g.pieces)} fragments, {have} bytes"
                    + (f" of {g.total}" if g.total is not None else ""),
                )
            )

    def _expire(self, ts: int) -> None:
        groups = self._groups
        # Dicts keep insertion order, which is (nearly) capture order: the oldest come first.
        while groups:
            key = next(iter(groups))
            g = groups[key]
            if ts - g.first_ts <= self._timeout_ns:
                break
            del groups[key]
            self._report(key, g, "timed out")

    def _group(self, key: tuple, ts: int, index: int, offset: int) -> _Group:
        self._expire(ts)
        g = self._groups.get(key)
        if g is None:
            if len(self._groups) >= self._max_groups:
                old_key = next(iter(self._groups))
                self._report(old_key, self._groups.pop(old_key), "evicted by the open-datagram cap")
            g = self._groups[key] = _Group(ts, index, offset)
        return g

    def poison(self, key: tuple, ts: int, index: int, offset: int) -> None:
        """Mark a datagram as lost (a fragment was cut): later fragments are absorbed quietly."""
        g = self._group(key, ts, index, offset)
        g.poisoned = True
        g.pieces = []

    def add(
        self, key: tuple, frag_offset: int, more: bool, payload: bytes, proto: int, ts: int, index: int, offset: int
    ) -> tuple[bytes, int] | None:
        """Add one fragment; return (datagram payload, upper protocol) once the datagram is whole."""
        g = self._group(key, ts, index, offset)
        if g.done is not None:
            if (frag_offset, hash(payload)) in g.done:
                if len(g.echoes) < MAX_ECHOES:
                    g.echoes.append((frag_offset, payload, more))
                return None  # a duplicate of a fragment of a datagram already delivered, so far
            del self._groups[key]  # the id was reused for a new datagram
            echoes = g.echoes
            g = self._group(key, ts, index, offset)
            g.echoes = [(o, p) for o, p, _ in echoes]  # its weakest pieces (see below)
            g.nbytes = sum(len(p) for _, p in g.echoes)
            g.total = next((o + len(p) for o, p, echo_more in echoes if not echo_more), None)
        if g.poisoned:
            return None
        end = frag_offset + len(payload)
        if end > MAX_DATAGRAM:
            self.issues.append(
                CaptureIssue(index, offset, "bad_ip_header", f"fragment ends at {end}, beyond {MAX_DATAGRAM}")
            )
            return None
        if not more:
            g.total = end  # (its own word, over an echo's)
        if frag_offset == 0:
            g.proto = proto
        g.pieces.append((frag_offset, payload))
        g.nbytes += len(payload)
        total = g.total
        if total is None or g.nbytes < total or g.proto is None:
            return None
        reach = 0
        for o, p in sorted(g.pieces + g.echoes, key=lambda op: op[0]):
            if o > reach:
                return None
            reach = max(reach, o + len(p))
        if reach < total:
            return None
        buf = bytearray(total)
        # Later arrivals are written first so that the first-seen bytes overwrite them; echoes of
        # the datagram before under the id, before all.
        for o, p in [*g.echoes, *reversed(g.pieces)]:
            n = min(len(p), total - o)
            if n > 0:
                buf[o : o + n] = p[:n]
        g.done = frozenset((o, hash(p)) for o, p in g.pieces + g.echoes)
        g.pieces, g.echoes = [], []
        return bytes(buf), g.proto

    def flush(self) -> None:
        """End of capture: every datagram still open is reported incomplete."""
        for key, g in self._groups.items():
            self._report(key, g, "still open at end of capture")
        self._groups.clear()
