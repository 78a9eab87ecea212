"""Captures of a session joined after its consumers learned their topic ids.

Real connections live for hours: a capture usually starts long after the consumer's Metadata
named the ids its Fetches use. ``never_named``: the confluent session from its first Fetch by
id, as five clients side by side; ``named_later``: the same, followed by a new client's
connection (the session's first Metadata connection, replayed later on a port of its own), so
that the ids are named only after the Fetches that use them; ``named_early``: that connection
first, then the clients (a client refreshed its metadata early in the capture, on a connection of
its own).
"""

from __future__ import annotations

import time
from pathlib import Path

from kafka_protocol_source import read_capture
from kafka_protocol_source.spark.partition_reader import slice_of
from kafka_protocol_source.views.topic_names import first_names

from ..cuts import segments_of
from .expected import TANSU_CONFLUENT
from .test_splits import _endpoints

NEW_CLIENT_PORT = 61001
LATE_COPIES = 5  # clients, each the session's late part: enough packets for their late starts to settle


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def as_client(segments, broker_port: int, ip: str, shift_ns: int) -> list:
    """``segments`` moved in time by ``shift_ns``, their client at ``ip``."""
    return [
        s._replace(
            timestamp_ns=s.timestamp_ns + shift_ns,
            **({"dst_ip": ip} if s.src_port == broker_port else {"src_ip": ip}),
        )
        for s in segments
    ]


def session() -> tuple[list, int, int]:
    """The confluent session's exchanges, the client port of its first naming response and the
    broker's port."""
    whole = list(read_capture(TANSU_CONFLUENT))
    fetch = next(e for e in whole if e.api_key == 1 and e.api_version >= 13)
    naming = next(e for e in whole if first_names([e]))
    return whole, port_of(naming.client_address), port_of(fetch.broker_address)


def late_clients() -> tuple:
    """The session from its first Fetch by id, as five clients side by side, a millisecond apart."""
    whole, naming_port, broker_port = session()
    first_fetch = next(e.request_packet for e in whole if e.api_key == 1 and e.api_version >= 13)
    late = [s for s in segments_of(TANSU_CONFLUENT) if s.packet_index >= first_fetch]
    assert naming_port not in {p for s in late for p in (s.src_port, s.dst_port)}  # that client is gone
    clients = (s for k in range(LATE_COPIES) for s in as_client(late, broker_port, f"10.0.{k}.2", k * 1_000_000))
    return tuple(sorted(clients, key=lambda s: s.timestamp_ns))


def naming_replayed(start_ns: int) -> tuple:
    """The session's first naming connection, replayed from ``start_ns`` on the port ``NEW_CLIENT_PORT``."""
    _, port, _ = session()
    connection = [s for s in segments_of(TANSU_CONFLUENT) if port in (s.src_port, s.dst_port)]
    shift = start_ns - connection[0].timestamp_ns
    return tuple(
        s._replace(
            timestamp_ns=s.timestamp_ns + shift,
            src_port=NEW_CLIENT_PORT if s.src_port == port else s.src_port,
            dst_port=NEW_CLIENT_PORT if s.dst_port == port else s.dst_port,
        )
        for s in connection
    )


def slices_apart(path: Path) -> int:
    """A number of slices in which the naming connection is read by a slice of its own."""
    exchanges = list(read_capture(path))
    naming = {_endpoints(e) for e in exchanges if first_names([e])}
    others = {_endpoints(e) for e in exchanges} - naming
    for count in range(2, 65):
        if {slice_of(n, count) for n in naming}.isdisjoint(slice_of(o, count) for o in others):
            return count
    raise AssertionError("no count puts it apart")


def stream_into(spark, folder: Path, tmp_path: Path, table: str, **options) -> None:
    """A stream over ``folder`` (with ``options``) into the memory table ``table``, until the
    folder has been quiet long enough for what is still open to be given up."""
    query = (
        spark.readStream.format("kafka-wire")
        .option("quietTimeout", "1")
        .options(**options)
        .load(str(folder))
        .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
        .format("memory")
        .queryName(table)
        .start()
    )
    try:
        query.processAllAvailable()
        time.sleep(1.5)  # the folder goes quiet: what is still open is given up
        query.processAllAvailable()
    finally:
        query.stop()
