"""Reading one partition: a capture file, or one connection slice of a large one, to Arrow batches.

Shared by the batch and the streaming reader. Runs on executors: parsers are built there on
first use (``decoder_for`` caches them per process) and never shipped.
"""

from __future__ import annotations

import math
import os
import zlib
from functools import partial

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from ..capture import packet_number
from ..capture.index import index_records
from ..capture.runs import RecordRuns
from ..capture.summary import sessions, summarize
from ..codec.decoder import decoder_for
from ..framing import CAPTURE_ERROR, FAILFAST_ERROR, MALFORMED_STATUSES, Exchange
from ..framing.quirks import known_deviation
from ..pipeline import CaptureOptions, read_with
from ..spec.api_keys import RECORDS_VIEW_APIS, TOPIC_NAMING_APIS
from ..views.exchanges import body_specs, exchange_row
from ..views.outcomes import response_error_codes
from ..views.records import by_read_mode, record_row_size, record_rows
from ..views.topic_names import TOPIC_NAMES, AwaitingNames, IdCarriers, IdNaming, TopicNames
from ..views.variant_spec import body_encoders
from .arrow import BatchBuilder
from .emit_rule import EmitRule
from .exchange_batch import ExchangeBatch
from .gc_scope import long_lived_frozen
from .naming_pass import earlier_names, naming_read
from .options import ReadOptions
from .stream_copies import moved_to
from .task_progress import task_progress
from .view_readers import DERIVED_VIEWS, apis_needed, derived_rows, shared_apis, view_row_apis

BATCH_ROWS = 2048
HELD_PER_BYTE = 16  # about what a decoded exchange held for its topic names takes, per byte on the wire
MAX_SPLITS_PER_FILE = 64
DEFAULT_STITCH_TOLERANCE_NS = 60 * 10**9  # a rotated file starts within this of the last one's end


class CapturePartition(InputPartition):
    """Files of one capture session (usually one file), one connection slice of them (with
    ``runs``, the only records of each file it reads), and for a stream the packets to read
    (``limits``), which rows are new (``emit``) and the session's files before those re-read
    (``earlier``: (path, packets), for the topic names they give)."""

    def __init__(
        self,
        paths,
        index: int = 0,
        count: int = 1,
        limits: dict | None = None,
        emit: EmitRule | None = None,
        notice: str | None = None,
        runs: dict[str, RecordRuns] | None = None,
        earlier: tuple[tuple[str, int], ...] = (),
        read_of: dict | None = None,
    ):
        paths = (paths,) if isinstance(paths, str) else tuple(paths)
        super().__init__((paths, index, count))
        self.paths, self.index, self.count, self.limits, self.emit = paths, index, count, limits, emit
        self.runs = runs or {}
        self.earlier = earlier
        # For a stream: per path, what is to be read of it ((first packet's time and checksum,
        # checksum of the packets up to its limit)), so that a file compressed or renamed since
        # the micro-batch was planned is read where it went (``stream_copies.moved_to``).
        self.read_of = read_of or {}
        self.notice = notice  # instead of reading: one capture_error row saying this about the file

    @property
    def path(self) -> str:
        return self.paths[0] if self.paths else ""


def plan_partitions(
    files,
    split_size: int,
    stitch: bool = False,
    tolerance_ns: int = DEFAULT_STITCH_TOLERANCE_NS,
    index: bool = False,
) -> list[CapturePartition]:
    """Partitions of a batch read: one per capture session (files of a rotated capture, when
    ``stitch``; else one per file); one over ``split_size`` bytes is shared by several, by
    connection. With ``index``, an index pass over such a session's files (``capture.index``:
    record headers and TCP endpoints only) gives each partition the records of its own
    connections, so that all of them together parse each record once (a gzipped file is still
    decompressed whole by each: it cannot be entered in the middle)."""
    groups = [[f] for f in files]
    if stitch and len(files) > 1:
        summaries = {f: summarize(f) for f in files}
        captures = [s for s in summaries.values() if s is not None]
        groups = [[s.path for s in chain] for chain in sessions(captures, tolerance_ns)]
        groups += [[f] for f, s in summaries.items() if s is None]
        order = {f: i for i, f in enumerate(files)}
        groups.sort(key=lambda g: order[g[0]])
    parts = []
    for group in groups:
        size = sum(os.path.getsize(f) for f in group)
        count = min(MAX_SPLITS_PER_FILE, max(1, math.ceil(size / split_size)))
        runs: list[dict[str, RecordRuns]] = [{} for _ in range(count)]
        if index and count > 1:
            for path in group:
                for i, file_runs in enumerate(index_records(path, count, partial(slice_of, count=count)) or ()):
                    runs[i][path] = file_runs
        parts += [CapturePartition(tuple(group), i, count, runs=runs[i]) for i in range(count)]
    return parts


def slice_of(endpoints: tuple[str, int, str, int], count: int) -> int:
    """The slice of ``count`` that a connection (its endpoints in canonical order) belongs to."""
    return zlib.crc32("|".join(map(str, endpoints)).encode()) % count


class PartitionReader:
    def __init__(self, options: ReadOptions, schema: StructType, apis=None, window=None):
        self.options, self.schema, self.apis, self.window = options, schema, apis, window

    def read(self, partition: CapturePartition):
        if not partition.path:
            return
        o = self.options
        registry = decoder_for(o.specs).registry
        encoders = body_encoders(registry)
        builder = BatchBuilder(self.schema, bodies=body_specs(encoders))
        with long_lived_frozen():
            if o.view == "exchanges":  # _rows gives the exchanges themselves, each added to the batch as it comes
                corrupt = o.corrupt_column if o.corrupt_column in self.schema.fieldNames() else None
                naming = IdNaming(carries=IdCarriers(registry)) if TOPIC_NAMES in self.schema.fieldNames() else None
                batch = ExchangeBatch(builder, encoders, response_error_codes(registry), corrupt, naming)
                for ex in self._counted(self._rows(partition, naming)):
                    batch.add(ex)
                    if len(batch) >= BATCH_ROWS:
                        yield batch.build()
                if len(batch):
                    yield batch.build()
                return
            rows = []
            for row in self._counted(self._rows(partition)):
                rows.append(row)
                if len(rows) >= BATCH_ROWS:
                    yield builder.build(rows)
                    rows = []
            if rows:
                yield builder.build(rows)

    def _counted(self, rows):
        """``rows``, told to the ``progressDir`` folder as they go, when there is one."""
        o = self.options
        return rows if o.progress_dir is None else task_progress(o.progress_dir, o.view, rows)

    def _rows(self, partition: CapturePartition, naming: IdNaming | None = None):
        """The view's rows, as dicts keyed by column; for the exchanges view, the exchanges
        (``naming``: the view's topic names, to be taught the names the read gives)."""
        o = self.options
        if partition.notice is not None:
            yield from self._notice_rows(partition)
            return
        if partition.read_of:
            partition = _followed(partition)
        records_view = o.view == "records"
        derived = o.view in DERIVED_VIEWS
        apis = (RECORDS_VIEW_APIS if self.apis is None else self.apis) if records_view else self.apis
        shared = shared_apis(o.view)
        if derived:
            apis = apis_needed(o.view, self.apis)
        naming_only: frozenset[int] = frozenset()  # decoded for the names they give, not rows of the view
        if naming is not None and apis is not None:
            naming_only = TOPIC_NAMING_APIS - apis
            apis = apis | naming_only
        paths = partition.paths
        options = CaptureOptions(
            o.ports,
            o.detect_kafka,
            o.max_frame_size,
            o.max_buffered_bytes,
            o.specs,
            apis,
            self.window,
            partition.limits or {},
            issues_here=partition.index == 0,
            max_decompressed_bytes=o.max_decompressed_bytes,
            record_runs=partition.runs,
            # FAILFAST fails on a gap the api filter would drop: it may have held the view's rows
            unknown_api_kept=MALFORMED_STATUSES if o.mode == "FAILFAST" else frozenset(),
        )
        keeps = self._view_keeps(derived)
        own_only = shared is not None and partition.count > 1 and all(p in partition.runs for p in paths)
        scope = slice_scope(partition.index, partition.count, None if own_only else shared)
        exchanges = read_with(list(paths), options, scope)
        if shared is not None:
            names = self._topic_names(partition, options, keeps, not own_only)
        elif naming is not None:  # a slice reads its own connections only: the names may be elsewhere
            names = naming.names = self._topic_names(  # (every typed view alike: one naming read)
                partition, options, _every, partition.count <= 1, ("teaches",)
            )
        else:
            names = TopicNames()
        if derived:  # batch only (see source.streamReader): every exchange of the session is new
            yield from derived_rows(o.view, (ex for ex in exchanges if keeps(ex)), paths, o, names)
            return
        if partition.emit is not None:
            exchanges = partition.emit.own(exchanges, paths, names if records_view or naming else None)
        if records_view:
            yield from by_read_mode(_named_records((ex for ex in exchanges if keeps(ex)), names), o.mode)
        elif naming is None:
            yield from (ex for ex in exchanges if keeps(ex))
        else:
            awaiting = naming.awaiting()
            for ex in exchanges:
                names.learn(ex)  # (a row the mode drops, one read leniently say, names its topics as well as any)
                if ex.api_key not in naming_only and keeps(ex):
                    if naming.waits(ex):
                        yield from awaiting.hold(ex, HELD_PER_BYTE * ((ex.request_size or 0) + (ex.response_size or 0)))
                    else:
                        yield ex
            yield from awaiting.release()

    def _notice_rows(self, partition: CapturePartition):
        """Instead of reading: the one row that says what is wrong with the file (as the mode says)."""
        o = self.options
        assert partition.notice is not None, "only a partition with a notice is read this way"
        if o.view == "exchanges" and o.mode == "PERMISSIVE":
            yield notice_row(partition.path, partition.notice)
        elif o.view != "records" and o.mode == "PERMISSIVE":
            yield exchange_row(notice_row(partition.path, partition.notice), None)
        elif o.mode == "FAILFAST":
            raise RuntimeError(f"{FAILFAST_ERROR}: {partition.path}: {partition.notice}")

    def _topic_names(
        self, partition: CapturePartition, options: CaptureOptions, keeps, complete: bool, keeps_key=None
    ) -> TopicNames:
        """Where the names of topic ids this read's connections do not give come from: a read of
        every connection of its capture, or for a stream (which cannot see past its packets) the
        session's files before those it re-reads (``keeps_key``: what ``keeps`` keeps, told apart
        from other predicates; None: this view's, mode's and requested api's)."""
        o = self.options
        key = (o.view, o.mode, o.api_key, o.api_version) if keeps_key is None else keeps_key
        if partition.emit is None:
            return TopicNames(partial(naming_read, partition.paths, options, keeps, key), complete=complete)
        if partition.earlier:
            return TopicNames(partial(earlier_names, partition.earlier, options, keeps, key), complete=False)
        return TopicNames()

    def _view_keeps(self, derived: bool):
        """Which exchanges the view reads on, as its read mode says: the mode is for the view's
        rows; what it reads for names only is not dropped or failed on (``_rows_or_names``)."""
        o = self.options
        if o.view == "connections" and o.mode == "DROPMALFORMED":
            return _every  # its rows are connections, each counting its bad exchanges: none is dropped
        keeps = self._mode_keeps if derived else self._keeps_exchange
        rows_of = view_row_apis(o.view)
        return keeps if rows_of is None else partial(_rows_or_names, rows_of, keeps)

    def _keeps_exchange(self, ex) -> bool:
        """Whether the rows of this exchange (or of its records) are kept: of the requested
        version, and kept by the read mode."""
        return _of_requested_version(ex, self.options) and self._mode_keeps(ex)

    def _mode_keeps(self, ex) -> bool:
        """Whether the read mode keeps this exchange (FAILFAST raises on a malformed one). A frame
        malformed only as a known peer deviates (outcome ``peer_quirk``) decoded, and real clients
        accept it: every mode keeps it."""
        if ex.status in MALFORMED_STATUSES and not known_deviation(ex.status, ex.error, ex.note):
            if self.options.mode == "FAILFAST":
                raise RuntimeError(_failfast_message(ex))
            if self.options.mode == "DROPMALFORMED":
                return False
        return True


def _followed(partition: CapturePartition) -> CapturePartition:
    """``partition`` with each file that went elsewhere since it was planned read there."""
    moved = {}
    for path in partition.paths:
        if path in partition.read_of:
            to = moved_to(path, partition.read_of[path], (partition.limits or {}).get(path, 0))
            if to is not None:
                moved[path] = to
    if not moved:
        return partition
    new = [moved.get(p, p) for p in partition.paths]
    limits = {moved.get(p, p): n for p, n in (partition.limits or {}).items()}
    emit = partition.emit
    if emit is not None:
        emit = emit.moved(moved)
    read_of = {moved.get(p, p): v for p, v in partition.read_of.items()}
    runs = {moved.get(p, p): r for p, r in partition.runs.items()}
    return CapturePartition(new, partition.index, partition.count, limits, emit, None, runs, partition.earlier, read_of)


def _every(_ex) -> bool:
    """Keeps every exchange: what a view reads only for the topic names it gives teaches them
    whatever the read mode (the mode drops or fails on the view's rows; a body read leniently, a
    broker's trailing bytes say, names its topics as well as any)."""
    return True


def _rows_or_names(rows_of: frozenset[int], keeps, ex) -> bool:
    """``keeps`` for the exchanges whose apis make rows of the view; the others are read for the
    names they give, which the read mode does not drop or fail on."""
    return (ex.api_key in TOPIC_NAMING_APIS and ex.api_key not in rows_of) or keeps(ex)


def _named_records(exchanges, names: TopicNames):
    """The records view's rows of ``exchanges``; a row whose topic id is not named yet waits
    (``AwaitingNames``) for a name the read may give later."""
    awaiting = AwaitingNames(names)
    for ex in exchanges:
        names.learn(ex)
        for row in record_rows(ex, names):
            if row["topic"] is None and row["topic_id"]:
                yield from awaiting.hold(row, record_row_size(row))
            else:
                yield row
    yield from awaiting.release()


def notice_row(path: str, error: str) -> Exchange:
    return Exchange(
        capture_file=path,
        connection_id=None,
        client_address=None,
        broker_address=None,
        request_time=None,
        response_time=None,
        latency_ms=None,
        api_key=None,
        api_name=None,
        api_version=None,
        correlation_id=None,
        client_id=None,
        request_size=None,
        response_size=None,
        request=None,
        response=None,
        status=CAPTURE_ERROR,
        error=error,
    )


_UNKNOWN = object()


def slice_scope(index: int, count: int, shared_apis: frozenset[int] | None):
    """Which connections partition ``index`` of ``count`` sharing a capture reads: those whose
    endpoints hash to it, and with ``shared_apis`` the others for these apis only (the records
    view needs every Metadata response to name the topics its own Fetches refer to by id)."""
    if count <= 1:
        return None
    other = shared_apis if shared_apis is not None else False
    answers: dict[tuple[str, int, str, int], object] = {}  # the scope is asked for every packet

    def scope(endpoints: tuple[str, int, str, int]):
        answer = answers.get(endpoints, _UNKNOWN)
        if answer is _UNKNOWN:
            if len(answers) >= 1 << 16:
                answers.clear()
            answer = answers[endpoints] = None if slice_of(endpoints, count) == index else other
        return answer

    return scope


def _of_requested_version(ex, options: ReadOptions) -> bool:
    """With api and apiVersion, rows of the api at other versions are left out (their bodies do
    not fit that version's schema); rows whose version is unknown (capture errors) stay."""
    if options.api_version is None or ex.api_version is None or ex.api_key != options.api_key:
        return True
    return ex.api_version == options.api_version


def _failfast_message(ex) -> str:
    """The file, where in it as far as that is known (a gap has no packet), and what went wrong:
    the response's packet and stream byte where it is the response that did not decode, else the
    request's (packets numbered as Wireshark numbers frames)."""
    response_failed = ex.response is None and ex.raw_response is not None
    request_failed = ex.request is None and ex.raw_request is not None
    answer = ex.response_packet is not None and (ex.request_packet is None or (response_failed and not request_failed))
    if answer:
        side, packet, file = "response", ex.response_packet, ex.response_file or ex.capture_file
        offset = ex.response_span[0] if ex.response_span else ex.stream_offset
    else:
        side, packet, file, offset = "request", ex.request_packet, ex.capture_file, ex.stream_offset
    what = "packet" if ex.status == CAPTURE_ERROR else f"{side} at packet"  # (a capture error: where the file broke)
    where = [f"{what} {packet_number(packet)}"] if packet is not None else []
    if offset is not None:
        side_of = "" if packet is None else f" of the {'broker' if answer else 'client'} side"
        where.append(f"stream byte {offset}{side_of}")
    if ex.connection_id:
        where.append(f"connection {ex.connection_id}")
    place = ": ".join([str(file), ", ".join(where)] if where else [str(file)])
    return f"{FAILFAST_ERROR}: {place}: {ex.status}: {ex.error}"
