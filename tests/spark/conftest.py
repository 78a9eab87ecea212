"""Fixtures the Spark tests share: captures of a session joined after its ids were named
(built by ``named_captures``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..cuts import Cut
from .named_captures import late_clients, naming_replayed


@pytest.fixture(scope="session")
def never_named(tmp_path_factory) -> Path:
    """The five clients alone: nothing in it names the ids their Fetches use."""
    return Cut(late_clients()).write(tmp_path_factory.mktemp("never_named") / "never_named.pcap")


@pytest.fixture(scope="session")
def named_later(tmp_path_factory) -> Path:
    """The five clients, then the session's first naming connection replayed on a port of its own."""
    clients = late_clients()
    replayed = naming_replayed(clients[-1].timestamp_ns + 1_000_000_000)
    return Cut(clients + replayed).write(tmp_path_factory.mktemp("named_later") / "named_later.pcap")


@pytest.fixture(scope="session")
def named_early(tmp_path_factory) -> Path:
    """The session's first naming connection replayed on a port of its own, then the five clients."""
    clients = late_clients()
    replayed = naming_replayed(clients[0].timestamp_ns - 2_000_000_000)
    assert replayed[-1].timestamp_ns < clients[0].timestamp_ns
    return Cut(replayed + clients).write(tmp_path_factory.mktemp("named_early") / "named_early.pcap")
