"""The codec's ``Decoder`` as the body decoder framing is handed (``framing.decoding.BodyDecoder``).

Framing never imports the codec: ``pipeline`` wires the two together through this adapter. It
owns what the codec's answers mean to framing (which api versions are defined, the lenient
decode whose failure is ``UndecodableBody``, a user's definitions backed by the bundled ones for
responses whose request is missing), not decoding itself.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from .codec.decoder import Decoder
from .codec.errors import DecodeError
from .codec.prefix import request_prefix, response_prefix
from .framing.decoding import UndecodableBody
from .records import DEFAULT_MAX_DECOMPRESSED_BYTES
from .spec.api_keys import API_VERSIONS

_KEY_VERSION = struct.Struct(">hh")


class CodecBodies:
    """The codec's ``Decoder`` as the ``framing.decoding.BodyDecoder`` framing is handed.

    ``bundled``: the bundled definitions' decoder, when ``decoder``'s are a user's. Which api
    and version a response whose request is missing can be read as (``response_layouts``,
    ``exact_response_bodies``) is then asked of the apis and versions either defines: one the
    user's file leaves out may still be what sent it."""

    def __init__(
        self,
        decoder: Decoder,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        bundled: Decoder | None = None,
    ):
        self.decoder = decoder
        self.bundled = bundled
        self._layouts: dict[tuple[int, int], tuple[int, ...]] | None = None
        self.max_decompressed_bytes = max_decompressed_bytes
        self.registry = decoder.registry
        self.source = decoder.registry.source
        # (api key, version) pairs found defined, asked about for every frame; only those are
        # kept, so what a peer's garbage asks about cannot grow them past the definitions' size
        self._requests: set[tuple[int, int]] = set()
        self._responses: set[tuple[int, int]] = set()

    def defines_request(self, api_key: int, api_version: int) -> bool:
        if (api_key, api_version) in self._requests:
            return True
        message = self.registry.request(api_key)
        if message is None or api_version not in message.valid_versions:
            return False
        self._requests.add((api_key, api_version))
        return True

    def defines_response(self, api_key: int, api_version: int) -> bool:
        if (api_key, api_version) in self._responses:
            return True
        if not self._defined(api_key, api_version):
            # KIP-511: ApiVersions answers a version it does not know with a v0 body, which the decoder reads.
            return api_key == API_VERSIONS and self.registry.response(api_key) is not None
        self._responses.add((api_key, api_version))
        return True

    def exact_response_bodies(self, payload: bytes, pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict]:
        if self.bundled is None:
            return self.decoder.exact_response_bodies(payload, pairs)
        ours: list[tuple[int, int]] = []
        theirs: list[tuple[int, int]] = []
        for pair in pairs:
            (ours if self._defined(*pair) else theirs).append(pair)
        found = self.decoder.exact_response_bodies(payload, ours)
        found.update(self.bundled.exact_response_bodies(payload, theirs))
        return found

    def response_layouts(self) -> Mapping[tuple[int, int], tuple[int, ...]]:
        if self._layouts is None:
            layouts = dict(self.registry.response_layouts())
            if self.bundled is not None:
                for (api_key, _), versions in self.bundled.registry.response_layouts().items():
                    left = tuple(v for v in versions if not self._defined(api_key, v))  # (still alike)
                    if left:
                        layouts[(api_key, left[0])] = left
            self._layouts = layouts
        return self._layouts

    def response_tagged_fields(self, api_key: int, api_version: int) -> frozenset[str]:
        if self.bundled is not None and not self._defined(api_key, api_version):
            return self.bundled.registry.response_tagged_fields(api_key, api_version)
        return self.registry.response_tagged_fields(api_key, api_version)

    def _defined(self, api_key: int, api_version: int) -> bool:
        message = self.registry.response(api_key)
        return message is not None and api_version in message.valid_versions

    def api_name(self, api_key: int) -> str | None:
        return self.registry.api_name(api_key)

    def decode_request(self, payload: bytes) -> dict:
        try:
            return self.decoder.decode_request(
                payload, lenient=True, max_decompressed_bytes=self.max_decompressed_bytes
            )
        except DecodeError as e:
            raise UndecodableBody(str(e)) from e

    def request_reads(self, payload: bytes, exactly: bool = False) -> bool:
        kafkas = self.bundled or self.decoder
        if len(payload) < 4:
            return False
        api_key, api_version = _KEY_VERSION.unpack_from(payload)
        message = kafkas.registry.request(api_key)
        if message is None or api_version not in message.valid_versions:
            return True
        try:
            decoded = kafkas.decode_request(payload, lenient=True, max_decompressed_bytes=self.max_decompressed_bytes)
        except DecodeError:
            return False
        return not exactly or not (decoded.get("trailing_bytes") or decoded.get("deviations"))

    def decode_response(self, payload: bytes, api_key: int, api_version: int, request: dict | None) -> dict:
        try:
            return self.decoder.decode_response(
                payload,
                api_key,
                api_version,
                request=request,
                lenient=True,
                max_decompressed_bytes=self.max_decompressed_bytes,
            )
        except DecodeError as e:
            raise UndecodableBody(str(e)) from e

    def request_prefix(self, payload: bytes) -> dict | None:
        return request_prefix(self.decoder, payload, self.max_decompressed_bytes)

    def response_prefix(self, payload: bytes, api_key: int, api_version: int) -> dict | None:
        return response_prefix(self.decoder, payload, api_key, api_version, self.max_decompressed_bytes)
