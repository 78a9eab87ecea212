"""The SQL views the command registers over the captures, and what they hold at a glance.

``exchanges`` (one row per request/response, cached: every command reads it at least once),
``records`` (one row per record produced or fetched), ``connections``, ``groups`` and ``lag``,
and ``traffic``, the name ``exchanges`` had before the README's names were used, kept so that
existing queries still run.
"""

from __future__ import annotations

import io
import os
from collections import Counter
from dataclasses import dataclass

from ..capture import ACK, SYN, CaptureError, TcpSegment, read_packets
from ..framing.model import REQUEST_MISSING, UNANSWERED
from ..report.queries import NOT_FINE
from ..views.exchanges import BODY_COLUMNS
from ..views.topic_names import TOPIC_NAMES

EXCHANGES, RECORDS = "exchanges", "records"
DERIVED = ("connections", "groups", "lag")  # read only when a query names them
ALIASES = {"traffic": EXCHANGES}
VIEWS = (EXCHANGES, RECORDS, *DERIVED)


def _named(view: str) -> str:
    aliases = [alias for alias, of in ALIASES.items() if of == view]
    return f"{view} (or {', '.join(aliases)})" if aliases else view


VIEW_LIST = f"{', '.join(map(_named, VIEWS[:-1]))} and {_named(VIEWS[-1])}"  # for help and messages
SCANNED_BYTES = 64 << 20  # of each file, looking for TCP when a capture held no Kafka
# options that shape the exchanges view only (a typed api, a subset of apis); records need their own
EXCHANGES_ONLY_OPTIONS = frozenset({"api", "apiversion", "apis", "columnnameofcorruptrecord", "topicnames"})


@dataclass(frozen=True)
class Summary:
    exchanges: int  # rows of the exchanges view
    kafka: int  # rows that are Kafka (an api was identified)
    connections: int
    not_ok: int  # rows whose outcome is not fine (report.queries.NOT_FINE)
    first: object  # first request time (UTC), or response time where the request was not captured
    last: object
    problem: str | None  # what a row that is not Kafka says, e.g. why the file did not read
    error_responses: int = 0  # of the not ok: answered with an error code (the rest travelled badly)
    requests_missing: int = 0  # of the not ok: answers whose request the capture does not have
    unanswered: int = 0  # of the not ok: requests without an answer in the capture

    @property
    def cut_or_unreadable(self) -> int:
        """Of the not ok: those that travelled badly, neither answered with an error code, nor unpaired."""
        return self.not_ok - self.error_responses - self.requests_missing - self.unanswered

    def describe(self) -> str:
        text = f"{self.exchanges} exchanges on {self.connections} connections, {self.first} .. {self.last} UTC"
        if not self.not_ok:
            return text
        # A capture joined mid-session always has a few exchanges it cut: told apart from Kafka's errors.
        rest = self.cut_or_unreadable
        parts = [f"{self.error_responses} answered with an error code"] if self.error_responses else []
        if self.requests_missing:
            parts.append(f"{self.requests_missing} answers whose request the capture does not have")
        if self.unanswered:
            parts.append(f"{self.unanswered} unanswered")
        if rest:
            parts.append(f"{rest} cut by the capture or unreadable")
        return f"{text}; {self.not_ok} not ok: {', '.join(parts)}"


def register_views(spark, paths: list[str], options: dict, bodies: bool = True) -> None:
    """``bodies=False``: the exchanges view leaves out ``request`` and ``response`` (and
    ``topic_names``, the names of their topic ids), for commands whose queries never read them.
    Encoding the bodies is most of what Spark adds to a read, and the cached view would hold
    every body in memory for nothing."""

    def load(options, schema=None):
        reader = spark.read.format("kafka-wire")
        for key, value in options.items():
            reader = reader.option(key, value)
        if schema is not None:
            reader = reader.schema(schema)
        return reader.load(paths if len(paths) > 1 else paths[0])

    exchanges = load(options)
    if not bodies:
        from pyspark.sql.types import StructType  # noqa: PLC0415 - pyspark loads once Spark starts

        slim = [f for f in exchanges.schema.fields if f.name not in BODY_COLUMNS and f.name != TOPIC_NAMES]
        exchanges = load(options, StructType(slim))
    exchanges = exchanges.cache()
    exchanges.createOrReplaceTempView(EXCHANGES)
    for alias in ALIASES:
        exchanges.createOrReplaceTempView(alias)
    records = {k: v for k, v in options.items() if k.lower() not in EXCHANGES_ONLY_OPTIONS}
    load({**records, "view": RECORDS}).createOrReplaceTempView(RECORDS)
    for view in DERIVED:
        load({**records, "view": view}).createOrReplaceTempView(view)


def summarize(spark) -> Summary:
    row = spark.sql(f"""
        SELECT count(*) AS exchanges, count(api_key) AS kafka, count(DISTINCT connection_id) AS connections,
               count_if({NOT_FINE}) AS not_ok, count_if(outcome = 'error_response') AS error_responses,
               count_if({NOT_FINE} AND outcome = '{REQUEST_MISSING}') AS requests_missing,
               count_if({NOT_FINE} AND outcome = '{UNANSWERED}') AS unanswered,
               min(coalesce(request_time, response_time)) AS first, max(coalesce(response_time, request_time)) AS last,
               first(CASE WHEN api_key IS NULL THEN concat(status, ': ', coalesce(error, note, '')) END, true)
                   AS problem
        FROM {EXCHANGES}""").first()
    return Summary(**row.asDict())


# Exchanges seen in two files within this many seconds of each other are one exchange twice.
SAME_EXCHANGE_S = 10


@dataclass(frozen=True)
class Duplicates:
    """Exchanges in more than one file: the same connection, api and correlation id, sent within
    ``SAME_EXCHANGE_S``. Files of one session are read as one capture (a request is in one of
    them, and packets seen twice are read once), so only files read as captures of their own
    (``stitch=false``) give such pairs."""

    exchanges: int
    first_file: str | None
    second_file: str | None

    def warning(self) -> str:
        return (
            f"{self.exchanges} exchange{'' if self.exchanges == 1 else 's'} of {self.first_file} "
            f"{'is' if self.exchanges == 1 else 'are'} in {self.second_file} too (the same connection, api and "
            f"correlation id within {SAME_EXCHANGE_S} s), and these files were read as captures of their own: "
            "they hold the same traffic, and every count has it twice. Read one of them, or read them as one "
            "capture (stitch=true, the default, for files that overlap in time; or mergecap -w merged.pcap ...), "
            "in which kafka-wire reads packets seen twice once"
        )


def duplicates(spark) -> Duplicates:
    row = spark.sql(f"""
        SELECT count(DISTINCT a.capture_file, a.connection_id, a.api_key, a.correlation_id) AS exchanges,
               min(a.capture_file) AS first_file, min_by(b.capture_file, a.capture_file) AS second_file
        FROM {EXCHANGES} a JOIN {EXCHANGES} b
          ON a.connection_id = b.connection_id AND a.api_key = b.api_key AND a.correlation_id = b.correlation_id
         AND a.capture_file < b.capture_file
         AND abs(unix_micros(a.request_time) - unix_micros(b.request_time)) < {SAME_EXCHANGE_S * 10**6}""").first()
    return Duplicates(**row.asDict())


def no_kafka_message(paths: list[str], summary: Summary, ports: str, files: list[str], options=None) -> str:
    """Why a read found no Kafka: ``options`` are the reader's (``ReadOptions``; None: the defaults)."""
    where = ", ".join(paths)
    if summary.exchanges:
        rows = f"{summary.exchanges} row{'' if summary.exchanges == 1 else 's'}"
        return f"no Kafka traffic in {where} ({rows}, e.g. {summary.problem})"
    servers, every_capture = tcp_servers(files)
    if every_capture and not servers:
        whole = all(os.path.getsize(f) <= SCANNED_BYTES for f in files)
        start = "" if whole else f" (in its first {SCANNED_BYTES >> 20} MiB)"
        return (
            f"no Kafka traffic in {where}: no TCP in it{start}. kafka-wire reads Kafka over TCP, also inside "
            "VXLAN, Geneve, GRE, ERSPAN and IP-in-IP tunnels; capture it with a filter that lets it through "
            "(e.g. 'tcp port 9092 or udp port 4789')"
        )
    detect = options is None or options.detect_kafka
    others = "others found by decoding first requests" if detect else "no others looked at: detectKafka=false"
    seen = ", ".join(f"{port} ({n} connection{'' if n == 1 else 's'})" for port, n in servers.most_common(5))
    hint = f" (TCP servers seen on ports {seen}: --ports {servers.most_common(1)[0][0]}, say)" if servers else ""
    return (
        f"no Kafka traffic in {where}: no connection looked like Kafka (broker ports {ports}, {others}); "
        f"name the brokers' ports with --ports{hint}"
    )


def tcp_servers(files: list[str]) -> tuple[Counter[int], bool]:
    """Per server port, how many connections the first ``SCANNED_BYTES`` of the files hold (the
    port a SYN went to, or where no SYN was captured, the lower of the two: clients' ports are
    ephemeral, high); and whether every file is a capture (a stream dump, or a file that cannot
    be read, says nothing of TCP)."""
    servers: dict[tuple, int] = {}
    every_capture = bool(files)
    for path in files:
        try:
            with open(path, "rb") as f:
                head = io.BytesIO(f.read(SCANNED_BYTES))
            for x in read_packets(head):
                if type(x) is not TcpSegment:
                    continue
                key = tuple(sorted(((x.src_ip, x.src_port), (x.dst_ip, x.dst_port))))
                if x.flags & SYN and not x.flags & ACK:
                    servers[key] = x.dst_port
                else:
                    servers.setdefault(key, min(x.src_port, x.dst_port))
        except (CaptureError, OSError):
            every_capture = False
    return Counter(servers.values()), every_capture
