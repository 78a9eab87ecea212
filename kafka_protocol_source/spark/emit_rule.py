"""Which rows of a stream's micro-batch are its own (``EmitRule``).

A micro-batch re-reads a tail of its capture session (what rebuilds the connections still
open), so it meets rows that earlier micro-batches emitted. The rule says, per row, whether this
micro-batch emits it: rows completed by packets it consumes first, and rows still open whose
request went stale during it. In a session taken at once in several places (one writer per
direction, say, on hosts whose clocks disagree), a response whose request was not read with it
may have its request in a later micro-batch: there a ``request_missing`` row is decided by time
alone, ``ORPHAN_WAIT_NS`` after the response, so that every read decides it alike, wherever it
starts and whatever let the response go. Which rows are decided so is told per file, from the
packet where it was first read beside another writer's (``by_time_from``): a row is decided
one way in every micro-batch, even where the files of a session overlap in time only later. An
answer that came there too long after its request for every such micro-batch to re-read the
request (``answer_wait_ns``) is read as two rows, the request still open and the answer alone.
Owns that decision, and what an emitted row then says of it (``EmitRule.own``: answered late,
its request came late, given up by which timeout); what the offsets and windows are comes from
``stream.py``; reading, from ``partition_reader.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..framing.context import FILE_MASK, FILE_SHIFT
from ..framing.model import LEFT_AT_END, OK, REQUEST_MISSING, UNANSWERED

ANSWERED_LATE = (
    "answered after an earlier micro-batch gave this request up (idleTimeout passed, or the folder was quiet "
    "for quietTimeout) and emitted it as unanswered"
)
# What an unanswered row given up by a stream says, instead of the end of the capture it did not reach.
GIVEN_UP_QUIET = (
    "no response before the folder went quiet (no new packet for quietTimeout): given up; an answer "
    "that comes later is another row, saying so"
)
GIVEN_UP_IDLE = (
    "no response within idleTimeout of capture time: given up; an answer that comes later is another row, saying so"
)


def given_up(quiet: bool, available_now: bool) -> str | None:
    """What the unanswered rows a micro-batch gives up say: a run of availableNow read the capture
    to its end; a stream gives them up when the folder is quiet, or as they go stale."""
    if quiet:
        return None if available_now else GIVEN_UP_QUIET
    return GIVEN_UP_IDLE


REQUEST_CAME_LATE = (
    "its request was read only after its response had come out, in an earlier micro-batch, as request_missing"
)
# What the answer of a request given up says where it comes alone (``EmitRule.answer_wait_ns``).
ANSWERED_APART = (
    "answered {late:.0f} s after its request (correlation id {correlation_id}), later than idleTimeout and a minute: "
    "the request was given up as unanswered (a row of its own), and in a capture taken in several places its answer "
    "comes alone"
)
SKIP, EMIT, LATE, AFTER_ORPHAN = 0, 1, 2, 3  # EmitRule's verdicts
_SAID = {LATE: ANSWERED_LATE, AFTER_ORPHAN: REQUEST_CAME_LATE}  # per verdict, what the row's note adds
# Of capture time, how long a response waits for its request in a session with several writers
# (clocks seconds apart): its row is decided in the micro-batch whose end first passes it by this.
ORPHAN_WAIT_NS = 60 * 10**9


@dataclass(frozen=True)
class EmitRule:
    """Which rows of a re-read are a micro-batch's own: those completed by a packet past
    ``new_from`` (packets already consumed, per file; ``completed_at`` names the packet by the
    row's content, so every read that completes the row names the same one), and rows still
    open at the end whose request went stale (no answer for the idle timeout) during this
    micro-batch.

    A row completed in new packets that was open and stale at the session's end before
    (``previous_end_ns``), or whose request was read before the folder last went quiet
    (``flushed_from``), was given up then, as it stood: it is not emitted again, unless its
    response came since (``LATE``: the request went out as unanswered)."""

    new_from: dict
    stale_from_ns: int | None  # open rows with a first time in [stale_from_ns, stale_to_ns) are given up
    stale_to_ns: int | None
    previous_end_ns: int | None = None  # capture time of the session's last packet read before
    # Responses without their request in packets of a file from ``by_time_from`` on (per file:
    # from where it was first read beside another writer's) are decided by time
    # (``ORPHAN_WAIT_NS``) between the session's ends before and now (1 << 62: the folder is
    # quiet), except those read before a flush (per file, the packets read then): given up at it.
    by_time_from: dict = field(default_factory=dict)
    ended_ns: int | None = None
    end_ns: int | None = None
    flushed_from: dict = field(default_factory=dict)
    given_up: str | None = None  # what an unanswered row given up says (None: the capture ended)
    # In a session of several writers: an answer decided by time (in packets from
    # ``by_time_from``) that came more than this after its request is read as two rows, the
    # request still open and the answer alone. The micro-batch that decides an answer by time
    # re-reads this far back from it (``stream.py``), and the one that paired it may have read
    # further: read as one exchange, it came answered late and, a minute later, as ``request_missing``.
    answer_wait_ns: int | None = None

    def moved(self, to: dict) -> EmitRule:
        """This rule for the files of its paths that went elsewhere (``to``: old path -> new)."""
        return replace(
            self,
            new_from={to.get(p, p): n for p, n in self.new_from.items()},
            by_time_from={to.get(p, p): n for p, n in self.by_time_from.items()},
            flushed_from={to.get(p, p): n for p, n in self.flushed_from.items()},
        )

    def own(self, exchanges, paths, names=None):
        """The exchanges of a micro-batch's re-read that are its own, each saying what the rule
        knows of it; the others still teach ``names`` (``learn``) the topic ids they name."""
        for ex in (row for read in exchanges for row in self._rows_of(read)):
            verdict = self.verdict(ex, paths)
            if verdict == SKIP:
                if names is not None:
                    names.learn(ex)
                continue
            said = _SAID.get(verdict)
            if said:
                yield replace(ex, note="; ".join(filter(None, (ex.note, said))))
            elif self.given_up and ex.status == UNANSWERED and (ex.error or "").startswith(LEFT_AT_END):
                yield replace(ex, error=self.given_up + ex.error[len(LEFT_AT_END) :])  # (the capture goes on)
            else:
                yield ex

    def _rows_of(self, ex) -> tuple:
        """``ex``, or, where its answer came more than ``answer_wait_ns`` after its request in
        packets decided by time, its request as still open and its answer alone: the rows that
        every read deciding them makes alike, whether it holds the request or not."""
        if self.answer_wait_ns is None or ex.status != OK:
            return (ex,)
        from_packet = self.by_time_from.get(ex.response_file or ex.capture_file)
        if from_packet is None or (ex.response_packet or 0) < from_packet:
            return (ex,)
        sent_ns, answered_ns = _ns(ex.request_time), _ns(ex.response_time)
        if sent_ns is None or answered_ns is None or answered_ns - sent_ns <= self.answer_wait_ns:
            return (ex,)
        return _given_up(ex), _answer_alone(ex, answered_ns - sent_ns)

    def verdict(self, ex, paths) -> int:
        """``SKIP``: not this micro-batch's; ``EMIT``; ``LATE``: a request given up as unanswered
        before, answered since; ``AFTER_ORPHAN``: an exchange whose response came out before as
        ``request_missing``, its request read only now (in another file, come late)."""
        said = self._verdict(ex, paths)
        if said == EMIT and self._came_late(ex) == "request" and self._response_went_out(ex):
            return AFTER_ORPHAN
        return said

    def _verdict(self, ex, paths) -> int:
        if ex.status == REQUEST_MISSING and self.by_time_from:
            from_packet = self.by_time_from.get(ex.capture_file)
            response_ns = _ns(ex.response_time)
            if from_packet is not None and response_ns is not None and (ex.response_packet or 0) >= from_packet:
                return self._orphan_verdict(ex, response_ns)
        late = None
        if ex.completed_at is not None:
            path = paths[ex.completed_at >> FILE_SHIFT]
            if (ex.completed_at & FILE_MASK) < self.new_from.get(path, 0):
                late = self._came_late(ex)
                if late is None:
                    return SKIP
                if late == "request":
                    return EMIT  # (with AFTER_ORPHAN where its response came out alone before)
        if ex.request_packet is not None and ex.request_packet < self.flushed_from.get(ex.capture_file, 0):
            # its request was read before the folder last went quiet: emitted as unanswered then
            # (or earlier), every micro-batch after that alike, not only the next one
            answered = ex.completed_at is not None and ex.response_time is not None
            return LATE if answered else SKIP
        if ex.completed_at is not None:
            first_ns = _ns(ex.request_time or ex.response_time)
            if self.stale_from_ns is None or first_ns is None or first_ns >= self.stale_from_ns:
                return EMIT
            # given up at the session's end before, as it stood then
            if late == "response":
                return LATE  # (its response read only now: answered since)
            answered_ns = _ns(ex.response_time) if ex.request_time is not None else None
            since = self.previous_end_ns
            # (completed in new packets, so answered since: at the same microsecond as the last packet read, too)
            return LATE if answered_ns is not None and since is not None and answered_ns >= since else SKIP
        if self.stale_to_ns is None:
            return SKIP
        first_ns = _ns(ex.request_time or ex.response_time)
        if first_ns is None:
            return EMIT
        stale = (self.stale_from_ns is None or first_ns >= self.stale_from_ns) and first_ns < self.stale_to_ns
        return EMIT if stale else SKIP

    def _came_late(self, ex) -> str | None:
        """Which side of ``ex``, completed in packets read before, came only now, in another file
        than the other side ("request", "response"; None: neither). Packets a writer gave after the
        frontier had passed them (it began late, or held them past both timeouts) can be read
        first in a later micro-batch. A row one of whose frames starts in packets new now cannot
        have been emitted whole before."""
        if ex.response_file is None:
            return None  # (both sides in one file, or no response)
        new_from = self.new_from
        if ex.response_packet is not None and ex.response_packet >= new_from.get(ex.response_file, 1 << 62):
            return "response"
        if ex.request_packet is not None and ex.request_packet >= new_from.get(ex.capture_file, 1 << 62):
            return "request"
        return None

    def _response_went_out(self, ex) -> bool:
        """Whether the response of ``ex`` (read before, without its request) came out as
        ``request_missing`` in an earlier micro-batch: at once where its file was read alone, and
        where it was read beside another writer's, once a micro-batch's end passed it by
        ``ORPHAN_WAIT_NS`` or a flush gave it up."""
        from_packet = self.by_time_from.get(ex.response_file)
        response_ns = _ns(ex.response_time)
        if from_packet is None or response_ns is None or (ex.response_packet or 0) < from_packet:
            return True
        if (ex.response_packet or 0) < self.flushed_from.get(ex.response_file, 0):
            return True
        return self.ended_ns is not None and response_ns + ORPHAN_WAIT_NS < self.ended_ns

    def _orphan_verdict(self, ex, response_ns: int) -> int:
        """A response no read so far found the request of: emitted by the micro-batch whose end
        first goes ``ORPHAN_WAIT_NS`` past it (re-reads reach back that far, so each holds it),
        or at a flush before that. Where this read let it go does not count: another read, starting
        elsewhere, lets it go elsewhere."""
        if (ex.response_packet or 0) < self.flushed_from.get(ex.capture_file, 0):
            return SKIP  # it was read before a flush, and given up then
        decided_ns = response_ns + ORPHAN_WAIT_NS
        if self.ended_ns is not None and decided_ns < self.ended_ns:
            return SKIP  # decided by an earlier micro-batch
        return EMIT if self.end_ns is None or decided_ns < self.end_ns else SKIP


def _given_up(ex):
    """The request of ``ex`` as a read that ends before its answer leaves it: open, unanswered."""
    return replace(
        ex,
        response_time=None,
        latency_ms=None,
        response_size=None,
        response=None,
        raw_response=None,
        response_packet=None,
        response_span=None,
        response_file=None,
        completed_at=None,
        status=UNANSWERED,
        error=LEFT_AT_END,
        note=None,
    )


def _answer_alone(ex, late_ns: int):
    """The answer of ``ex`` as a row without its request, saying where the request went."""
    return replace(
        ex,
        capture_file=ex.response_file or ex.capture_file,
        response_file=None,
        request_time=None,
        latency_ms=None,
        request_size=None,
        request=None,
        raw_request=None,
        request_packet=None,
        request_span=None,
        stream_offset=ex.response_span[0] if ex.response_span else None,
        status=REQUEST_MISSING,
        error=ANSWERED_APART.format(late=late_ns / 1e9, correlation_id=ex.correlation_id),
    )


def _ns(when) -> int | None:
    return None if when is None else int(when.timestamp() * 1_000_000) * 1000
