"""Framing stage: TCP byte streams in, Kafka exchanges (request + response) out.

Owns frame splitting and resync (``splitter``), telling client from broker and Kafka from
other traffic (``connection``, ``sniff``), pairing by correlation id (``pairing``), reading
responses whose request was not captured (``orphans``), the row of each exchange
(``exchange_build``), the notes of retransmitted copies that differed (``conflicts``) and stream
dumps (``dumps``). It is handed a body decoder
(``decoding.BodyDecoder``) and never imports the codec; ``kafka_protocol_source.pipeline`` wires
it to the other stages (``read_capture``).
"""

from .model import CAPTURE_ERROR, FAILFAST_ERROR, MALFORMED_STATUSES, STATUSES, Exchange, Frame

__all__ = ["CAPTURE_ERROR", "FAILFAST_ERROR", "MALFORMED_STATUSES", "STATUSES", "Exchange", "Frame"]
