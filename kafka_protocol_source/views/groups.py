"""The groups view: one row per consumer group generation, from the coordinator's exchanges.

Classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit): a rebalance starts
with the first JoinGroup request after the group was stable (or the first one seen) and gathers
every JoinGroup and SyncGroup until the generation's SyncGroups are answered: a
``MEMBER_ID_REQUIRED`` answer and the join that follows it (KIP-394) are two steps of one
rebalance. A rebalance that fails before it syncs (a SyncGroup answered
``REBALANCE_IN_PROGRESS``, a join sent after its answers and not answered with its generation)
ends there, and the joins after it are the next rebalance's; a Heartbeat so answered before the
syncs does not end it (older brokers answer so until the leader's SyncGroup). A join answered
with the current generation, with no rebalance under way, is a step of that generation (a static
member's restart, KIP-345). The generation's members, protocol and leader come from the
JoinGroup responses (the leader's lists every member and its subscription), assignments from the
SyncGroups (decoded as ConsumerProtocolAssignment here when the decoder could not know the
group's protocol type: a SyncGroup request older than v5 does not carry it). A generation ends
when a member leaves, a member (re)joins, the coordinator answers ``REBALANCE_IN_PROGRESS`` or
fences a member, or the capture ends. KIP-848 groups (ConsumerGroupHeartbeat) are read by
``group_epochs``. A group is one group id at one coordinator.

Exchanges are taken in request-time order (a rebalance spans connections). Owns the row shape
(``GROUP_COLUMNS``); error names come from ``spec.error_codes``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..codec.decoder import decoder_for
from ..codec.embedded import decode_versioned
from ..codec.errors import DecodeError
from ..framing.model import body_cut
from ..spec.error_codes import error_name
from .group_epochs import CONSUMER_GROUP_HEARTBEAT, EpochTracker
from .group_model import GROUP_COLUMNS, Generation, Member, by_time, named_partitions
from .topic_names import TopicNames

OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 11, 12, 13, 14
TXN_OFFSET_COMMIT = 28  # an exactly-once producer commits its consumer's offsets so (KIP-98)
COMMITS = frozenset({OFFSET_COMMIT, TXN_OFFSET_COMMIT})
GROUP_APIS = COMMITS | {JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, CONSUMER_GROUP_HEARTBEAT}
REBALANCE_IN_PROGRESS = 27
FENCED = {22: "ILLEGAL_GENERATION", 25: "UNKNOWN_MEMBER_ID", 82: "FENCED_INSTANCE_ID"}

__all__ = ["GROUP_APIS", "GROUP_COLUMNS", "GroupsBuilder", "group_rows"]


def group_rows(exchanges: Iterable, decoder=None) -> Iterator[dict]:
    """Rows (dicts keyed by ``GROUP_COLUMNS``) of every group generation in ``exchanges``."""
    builder = GroupsBuilder(decoder)
    for ex in exchanges:
        builder.add(ex)
    return builder.rows()


class GroupsBuilder:
    def __init__(self, decoder=None):
        self.decoder = decoder or decoder_for(None)
        self.names = TopicNames()
        self.exchanges: list = []

    def add(self, ex) -> None:
        """Take one exchange (any api: topic names are learned from Metadata and the like)."""
        self.names.learn(ex)
        if ex.api_key in GROUP_APIS and (ex.request or ex.response):
            self.exchanges.append(ex)

    def rows(self) -> Iterator[dict]:
        # A group is named within its cluster: the same group id at two coordinators (two clusters
        # in one capture, or rotated files of different sessions read as one) is two groups.
        by_coordinator: dict[str | None, list] = {}
        for ex in sorted(self.exchanges, key=by_time):
            by_coordinator.setdefault(ex.broker_address, []).append(ex)
        generations = []
        for exchanges in by_coordinator.values():
            generations += self._generations(exchanges)
        generations.sort(
            key=lambda g: (
                g.group_id,
                g.sort_time(),
                g.generation_id if g.generation_id is not None else -1,
                g.coordinator or "",
            )
        )
        return (g.row() for g in generations)

    def _generations(self, exchanges: list) -> list[Generation]:
        classic = _Classic(self.decoder, self.names)
        epochs = EpochTracker(self.names)
        for ex in exchanges:
            if ex.api_key == CONSUMER_GROUP_HEARTBEAT:
                epochs.heartbeat(ex)
            elif ex.api_key in COMMITS and epochs.knows((ex.request or {}).get("group_id")):
                epochs.commit(ex)
            else:
                classic.take(ex)
        return classic.finish() + epochs.finish()


class _Classic:
    def __init__(self, decoder, names: TopicNames):
        self.decoder, self.names = decoder, names
        self.generations: dict[tuple[str, int], Generation] = {}
        self.rebalancing: dict[str, Generation] = {}  # group -> the rebalance under way (no generation id yet)
        self.current: dict[str, Generation] = {}  # group -> its newest generation
        self.protocol_types: dict[str, str] = {}

    def take(self, ex) -> None:
        req, resp = ex.request or {}, ex.response or {}
        group = req.get("group_id")
        if not group:
            return
        handler = {
            JOIN_GROUP: self._join,
            SYNC_GROUP: self._sync,
            HEARTBEAT: self._heartbeat,
            LEAVE_GROUP: self._leave,
            OFFSET_COMMIT: self._commit,
            TXN_OFFSET_COMMIT: self._commit,
        }.get(ex.api_key)
        if handler is not None:
            handler(ex, group, req, resp)

    # -- a rebalance ------------------------------------------------------------------

    def _join(self, ex, group, req, resp) -> None:
        member_id = req.get("member_id") or ""
        joining = member_id or resp.get("member_id") or None  # a new member's id is in the answer (KIP-394)
        code = resp.get("error_code") if ex.response is not None else None
        rebalance = self.rebalancing.get(group)
        if rebalance is not None and self._next_rebalance(rebalance, ex, code, resp):
            rebalance = None
        current = self.current.get(group)
        if rebalance is None and current is not None and self._joins_as_it_is(current, code, resp):
            rebalance = current  # no rebalance: a static member's restart (KIP-345), a follower's rejoin
        elif rebalance is None:
            rebalance = self.rebalancing[group] = Generation(group, "classic", ex.capture_file, ex.broker_address)
            rebalance.rebalance_start = ex.request_time or ex.response_time
            rebalance.began_here = current is not None or not member_id
            if current is not None:
                why = "member_rejoined" if member_id in current.members else "member_joined"
                current.end(why, ex.request_time, joining)
        if req.get("protocol_type"):
            self.protocol_types[group] = req["protocol_type"]
        rebalance.step(ex, joining, code)
        if code != 0 or resp.get("generation_id", -1) < 0:
            return
        generation = self._generation(group, resp["generation_id"], rebalance, ex)
        if generation is rebalance and rebalance.given_at is None and self.rebalancing.get(group) is rebalance:
            rebalance.given_at = ex.response_time
        generation.protocol_type = req.get("protocol_type") or generation.protocol_type
        generation.protocol_name = resp.get("protocol_name") or generation.protocol_name
        generation.leader = resp.get("leader") or generation.leader
        joined = generation.member(resp.get("member_id") or member_id)
        joined.seen_in(ex)
        for proto in req.get("protocols") or ():
            if proto.get("name") == generation.protocol_name and proto.get("metadata_decoded"):
                joined.subscribe(proto["metadata_decoded"])
        for m in resp.get("members") or ():  # only the leader's response lists them
            generation.listed.add(m.get("member_id"))
            member = generation.member(m.get("member_id"))
            member.instance_id = m.get("group_instance_id") or member.instance_id
            if m.get("metadata_decoded"):
                member.subscribe(m["metadata_decoded"])

    @staticmethod
    def _joins_as_it_is(current: Generation, code: int | None, resp: dict) -> bool:
        """Whether a join, with no rebalance under way, is answered with the current generation:
        the coordinator let the member in without a rebalance."""
        return current.generation_id is not None and code == 0 and resp.get("generation_id") == current.generation_id

    @staticmethod
    def _next_rebalance(rebalance: Generation, ex, code: int | None, resp: dict) -> bool:
        """Whether a join begins the rebalance after the one under way, which then never synced:
        it is answered with a later generation, or it was sent after the one under way gave out
        its generation and is not answered with it (a new member's MEMBER_ID_REQUIRED, no answer)."""
        under_way = rebalance.generation_id
        if under_way is None:
            return False
        answered = resp.get("generation_id", -1) if code == 0 else None
        if answered is not None and answered > under_way:
            return True
        sent, given = ex.request_time, rebalance.given_at
        return answered != under_way and sent is not None and given is not None and sent > given

    def _generation(self, group: str, generation_id: int, rebalance: Generation | None, ex) -> Generation:
        """The generation of this id (made when first seen), which becomes the group's current
        one unless a newer one is. Exchanges come in request-time order, so an older generation
        can show up after a newer one: a JoinGroup sent before an old member's last heartbeat
        is answered with the new generation (a capture that starts during a rebalance)."""
        key = (group, generation_id)
        generation = self.generations.get(key)
        current = self.current.get(group)
        newer = current is None or current.generation_id is None or generation_id > current.generation_id
        if generation is not None:
            if newer and current is not generation:
                self.current[group] = generation
            return generation
        if rebalance is not None and rebalance.generation_id is None:
            generation = rebalance
        else:  # first seen mid-generation (the capture started after its rebalance)
            generation = Generation(group, "classic", ex.capture_file, ex.broker_address)
            generation.protocol_type = self.protocol_types.get(group)
        generation.generation_id = generation_id
        self.generations[key] = generation
        if newer:
            if current is not None and current is not generation:
                current.end("rebalance_in_progress", ex.request_time, None)  # ended in a rebalance we did not see start
            self.current[group] = generation
        return generation

    def _sync(self, ex, group, req, resp) -> None:
        generation_id = req.get("generation_id")
        if generation_id is None:
            return
        rebalance = self.rebalancing.get(group)
        code = resp.get("error_code") if ex.response is not None else None
        if code == REBALANCE_IN_PROGRESS and rebalance is not None and rebalance.generation_id is None:
            rebalance = None  # refused while the next rebalance waits for its joins: of the generation before
        generation = self._generation(group, generation_id, rebalance, ex)
        member_id = req.get("member_id")
        generation.step(ex, member_id, code)
        consumer = (
            req.get("protocol_type") or generation.protocol_type or self.protocol_types.get(group)
        ) == "consumer"
        for a in req.get("assignments") or ():  # only the leader's request carries them
            generation.listed.add(a.get("member_id"))
            self._assign(generation.member(a.get("member_id")), a, consumer)
        member = generation.member(member_id)
        member.seen_in(ex)
        if code == 0:
            self._assign(member, resp, consumer)
            generation.synced(ex.response_time)
            self.rebalancing.pop(group, None)
        elif code is not None:
            self._error(generation, ex, member_id, code)

    def _assign(self, member: Member, holder: dict, consumer: bool) -> None:
        decoded = holder.get("assignment_decoded")
        if decoded is None and consumer and holder.get("assignment"):
            try:
                decoded = decode_versioned(self.decoder, "ConsumerProtocolAssignment", holder["assignment"])
            except DecodeError:
                decoded = None
        if decoded is not None:
            member.assignment = named_partitions(decoded.get("assigned_partitions"), "topic", self.names)

    # -- a stable generation ------------------------------------------------------------

    def _known(self, group: str, generation_id, ex) -> Generation | None:
        if generation_id is None or generation_id < 0:
            return self.current.get(group)
        return self._generation(group, generation_id, None, ex)

    def _heartbeat(self, ex, group, req, resp) -> None:
        if "generation_id" not in req:
            return  # (cut by the capture before it: whose generation is not known)
        generation = self._known(group, req.get("generation_id"), ex)
        if generation is None:
            return
        generation.heartbeats += 1
        generation.seen(ex.request_time)
        generation.member(req.get("member_id")).seen_in(ex)
        code = resp.get("error_code")
        if code:
            generation.heartbeat_errors.append(error_name(code))
            if code == REBALANCE_IN_PROGRESS and self.rebalancing.get(group) is generation:
                return  # before its syncs (older brokers answer so): they tell whether it ended
            self._error(generation, ex, req.get("member_id"), code)

    def _error(self, generation: Generation, ex, member_id, code: int) -> None:
        if code == REBALANCE_IN_PROGRESS:
            generation.end("rebalance_in_progress", ex.response_time, None)
            if self.rebalancing.get(generation.group_id) is generation:
                del self.rebalancing[generation.group_id]  # it never synced: the next join begins another
        elif code in FENCED:
            generation.end("member_fenced", ex.response_time, member_id)

    def _unknown_generation(self, ex, group: str) -> Generation:
        """The group's current generation; for a group seen in none, one without an id (a group
        that only leaves, or only commits: see ``_commit``)."""
        generation = self.current.get(group)
        if generation is None:
            generation = self.current[group] = Generation(group, "classic", ex.capture_file, ex.broker_address)
        return generation

    def _leave(self, ex, group, req, resp) -> None:
        generation = self._unknown_generation(ex, group)
        generation.seen(ex.request_time)
        leaving = [req["member_id"]] if req.get("member_id") else [m.get("member_id") for m in req.get("members") or ()]
        for member_id in leaving:
            if member_id:
                generation.member(member_id).left = ex.request_time
        generation.end("member_left", ex.request_time, leaving[0] if leaving else None)

    def _commit(self, ex, group, req, resp) -> None:
        if "generation_id_or_member_epoch" not in req and "generation_id" not in req and body_cut(ex, "request"):
            return  # (cut by the capture before it: whose generation is not known)
        generation_id = req.get("generation_id_or_member_epoch", req.get("generation_id"))
        if generation_id is None or generation_id < 0:
            # Outside any generation: a consumer that assigns itself its partitions, an exactly-once
            # producer's TxnOffsetCommit (generation -1); in the current one, if the capture has one.
            generation: Generation | None = self._unknown_generation(ex, group)
        else:
            generation = self._known(group, generation_id, ex)
        if generation is None:
            return
        generation.commit(ex, req, resp, self.names)

    def finish(self) -> list[Generation]:
        out = list(self.generations.values())
        out += [g for g in self.rebalancing.values() if g.generation_id is None]  # never completed
        out += [g for g in self.current.values() if g.generation_id is None and g not in out]  # leaves, commits only
        return out
