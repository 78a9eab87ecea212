"""Framing stage: TCP byte streams in, Kafka exchanges (request + response) out.

Public surface::

    read_capture(path, *, ports=(9092,), detect_kafka=True, max_frame_size=100 MiB,
                 max_buffered_bytes=16 MiB, specs=None) -> Iterator[Exchange]
    Exchange            # frozen dataclass, one request/response pair or one unpairable frame
    STATUSES            # the values of Exchange.status

Owns frame splitting and resync (``splitter``), telling client from broker and Kafka from
other traffic (``connection``, ``sniff``), pairing by correlation id (``pairing``), stream
dumps (``dumps``) and wiring the stages (``pipeline``).
"""

from .model import STATUSES, Exchange, Frame
from .pipeline import CAPTURE_ERROR, read_capture

__all__ = ["CAPTURE_ERROR", "Exchange", "Frame", "STATUSES", "read_capture"]
