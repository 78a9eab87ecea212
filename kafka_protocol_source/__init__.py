"""kafka-wire: decode Kafka network traffic (captures and stream dumps) into tables.

Public API of the protocol core:

* ``decode_request(payload)``: one request frame without its 4-byte size prefix -> dict with
  ``api_key``, ``api_name``, ``api_version``, ``correlation_id``, ``client_id`` and ``body``.
* ``decode_response(payload, api_key, api_version)``: -> dict with ``correlation_id``, ``body``.
* ``DecodeError``: raised for a frame that does not decode (api, version, offset, field path).

and of the capture pipeline:

* ``read_capture(path, **options)``: a pcap, pcapng (optionally gzipped), the files of one
  rotated capture, or a stream dump in; ``Exchange`` values (request + response with timing and
  connection metadata) out.
"""

from .codec.decoder import Decoder, decode_request, decode_response, decoder_for
from .codec.errors import DecodeError
from .framing import Exchange
from .pipeline import CaptureOptions, read_capture


def register(spark) -> None:
    """Register the ``kafka-wire`` data source with ``spark`` (needed only with Spark Connect)."""
    from .spark import register as _register  # noqa: PLC0415 - keep pyspark out of plain decoding

    _register(spark)


__all__ = [
    "CaptureOptions",
    "DecodeError",
    "Decoder",
    "Exchange",
    "decode_request",
    "decode_response",
    "decoder_for",
    "read_capture",
    "register",
]
