"""What framing needs from a body decoder, as a protocol it is handed (it never imports one).

The pipeline adapts the codec's ``Decoder`` to this; tests may hand in anything that answers
the same questions. A body that cannot be read raises ``UndecodableBody``; what the decoder
returns for a request carries the header fields (``api_key``, ``api_version``,
``correlation_id``, ``client_id``), the ``body``, and optionally ``trailing_bytes`` (bytes left
after a body that otherwise decoded) and a ``note``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol


class UndecodableBody(ValueError):
    """A frame whose body the definitions in use cannot read; the message says where and why."""


class BodyDecoder(Protocol):
    source: str  # where the definitions come from, for messages

    def defines_request(self, api_key: int, api_version: int) -> bool: ...

    def defines_response(self, api_key: int, api_version: int) -> bool: ...

    def api_name(self, api_key: int) -> str | None: ...

    def decode_request(self, payload: bytes) -> dict: ...

    def request_reads(self, payload: bytes, exactly: bool = False) -> bool:
        """Whether a request frame (header and body) reads by Kafka's own definitions, whatever
        the user's are (a frame start must not depend on them), where they have its api and
        version: one they lack cannot be told and reads. ``exactly``: by the spec, every byte
        used (a request read leniently, as real peers' small deviations are, does not count)."""

    def decode_response(self, payload: bytes, api_key: int, api_version: int, request: dict | None) -> dict: ...

    def request_prefix(self, payload: bytes) -> dict | None:
        """A request frame the capture cut short (the bytes present, after the size), read up
        to the cut: ``decode_request``'s result with a body of the fields before it, and
        ``cut_at`` (the field it went through); None where it does not read."""

    def response_prefix(self, payload: bytes, api_key: int, api_version: int) -> dict | None:
        """``request_prefix`` of a response of ``api_key`` at ``api_version``."""

    def exact_response_bodies(self, payload: bytes, pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict]:
        """(api key, version) -> body, of the pairs that read ``payload`` whole and by the spec."""

    def response_layouts(self) -> Mapping[tuple[int, int], tuple[int, ...]]:
        """(api key, first version) -> the versions that read any bytes alike."""

    def response_tagged_fields(self, api_key: int, api_version: int) -> frozenset[str]: ...
