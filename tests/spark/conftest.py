"""Fixtures the Spark tests share: captures of a session joined after its ids were named
(built by ``named_captures``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..cuts import Cut, segments_of
from .expected import TANSU_CONFLUENT
from .named_captures import NEW_CLIENT_PORT, late_clients, session


@pytest.fixture(scope="session")
def never_named(tmp_path_factory) -> Path:
    """The five clients alone: nothing in it names the ids their Fetches use."""
    return Cut(late_clients()).write(tmp_path_factory.mktemp("never_named") / "never_named.pcap")


@pytest.fixture(scope="session")
def named_later(tmp_path_factory) -> Path:
    """The five clients, then the session's first naming connection replayed on a port of its own."""
    clients = late_clients()
    _, port, _ = session()
    connection = [s for s in segments_of(TANSU_CONFLUENT) if port in (s.src_port, s.dst_port)]
    shift = clients[-1].timestamp_ns - connection[0].timestamp_ns + 1_000_000_000
    replayed = tuple(
        s._replace(
            timestamp_ns=s.timestamp_ns + shift,
            src_port=NEW_CLIENT_PORT if s.src_port == port else s.src_port,
            dst_port=NEW_CLIENT_PORT if s.dst_port == port else s.dst_port,
        )
        for s in connection
    )
    return Cut(clients + replayed).write(tmp_path_factory.mktemp("named_later") / "named_later.pcap")
