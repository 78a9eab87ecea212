"""What every connection of one capture shares: options, the body decoder it is handed, and
where in the capture reading is.

Besides the decoder for bodies (the user's definitions, maybe partial), it holds what finding
Kafka needs and what must not depend on those definitions: the table of api keys and versions
the protocol has (``known``, from the bundled definitions) and their names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from ..capture.model import FILE_MASK, FILE_SHIFT  # (re-exported: the stages above read them here)
from .decoding import BodyDecoder
from .sniff import ApiVersionsTable
from .splitter import DEFAULT_MAX_FRAME_SIZE

DEFAULT_PORTS = frozenset({9092})
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)  # + timedelta: exact, and cheaper than fromtimestamp


@dataclass(slots=True)
class CaptureContext:
    capture_file: str
    decoder: BodyDecoder
    known: ApiVersionsTable  # the protocol's api keys and versions: what finding Kafka relies on
    ports: frozenset[int] = DEFAULT_PORTS
    detect: bool = True  # find Kafka on unconfigured ports by a request start in a side's bytes
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    apis: frozenset[int] | None = None  # decode and keep only these api keys
    window_ns: tuple[int | None, int | None] | None = None  # keep requests sent in [from, to]
    bundled_names: dict[int, str] | None = None  # api names for keys the definitions in use lack
    # A session of several files (rotated captures) is read as one: packet indices are global,
    # ``FILE_SHIFT`` bits per file, and ``files`` names them in order.
    files: tuple[str, ...] = ()
    position: int | None = None  # global index of the packet being read (None: past the end)
    # Rows of these statuses whose api is unknown (a gap, a frame without a readable header)
    # pass the api filter: any of them may be of an api it asks for (a FAILFAST read fails on them).
    unknown_api_kept: frozenset[str] = frozenset()
    # (ip, port) of the brokers this capture's connections were found serving Kafka on: a listener
    # speaks one protocol, so a connection to one of them is Kafka where its bytes cannot show it.
    brokers_found: set[tuple[str, int]] = field(default_factory=set)

    def locate(self, packet: int | None) -> tuple[str, int | None]:
        """The file and in-file index of a global packet index (the first file when unknown)."""
        if packet is None or not self.files:
            return self.capture_file, packet
        return self.files[packet >> FILE_SHIFT], packet & FILE_MASK

    def wanted(self, api_key: int | None, request_ns: int | None, status: str | None = None) -> bool:
        """Whether an exchange passes the api and time filters (unknown values do not, but for an
        unknown api and a status in ``unknown_api_kept``)."""
        if self.apis is not None and api_key not in self.apis:
            if api_key is not None or status not in self.unknown_api_kept:
                return False
        if self.window_ns is not None:
            low, high = self.window_ns
            if request_ns is None or (low is not None and request_ns < low) or (high is not None and request_ns > high):
                return False
        return True

    @staticmethod
    def time(ns: int | None) -> datetime | None:
        if ns is None or ns == 0:  # 0: the capture recorded no time (pcapng simple packets, dumps)
            return None
        try:
            return _EPOCH + timedelta(0, 0, ns // 1000)  # (days, seconds, microseconds): by position, 25% faster
        except (OverflowError, OSError, ValueError):  # beyond what a datetime holds (an absurd if_tsoffset)
            return None
