"""Decode whole Kafka frames: header, then body, with the header-version rules applied.

``Decoder`` binds a spec registry to a parser cache. ``decode_request`` reads the api key and
version from the first four bytes, picks the header version (``spec.headers``), and decodes the
body at that version; ``decode_response`` needs the api key and version from the request.
A body must use every byte of the frame: leftovers mean the frame was read at the wrong layout.

Each frame first takes a fast path: a ``_Plan`` per api key, version and direction (looked up
once: the two compiled parsers, the records fields, whether embedded data can follow) and the
two parses, nothing else. Anything that is not a clean decode (an unknown key or version, a
parser that fails, bytes left over) goes through the general path from the start, which says
what went wrong, recovers where it can and gives the same value for a frame the fast path takes.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from io import BytesIO
from typing import BinaryIO

from ..records import DEFAULT_MAX_DECOMPRESSED_BYTES, DecompressionBudget
from ..spec.api_keys import API_VERSIONS, ENVELOPE, JOIN_GROUP, SYNC_GROUP
from ..spec.headers import request_header_version, response_header_version
from ..spec.registry import SpecRegistry, registry_for
from .cache import ParserCache
from .embedded import decode_embedded
from .errors import DecodeError, TrailingBytes, Truncated, Where, WireError
from .records_pass import decode_records_fields, records_paths
from .runtime import remaining

_API_KEY_VERSION = struct.Struct(">hh")
# Requests inside requests (EnvelopeRequest) are decoded this deep at most: a frame that nests
# further is a DecodeError, not a RecursionError.
MAX_NESTING = 16
_NOT_NULLABLE = "where not nullable"


_REQUEST: Where = {"direction": "request"}
_EMBEDDING = frozenset({JOIN_GROUP, SYNC_GROUP, ENVELOPE})  # apis whose bodies decode_embedded may add to


@dataclass(frozen=True, slots=True)
class _Plan:
    """What decoding a clean frame of one api key, version and direction takes."""

    header: Callable[[BinaryIO], dict]  # compiled parsers (Struct.compile_parser)
    body: Callable[[BinaryIO], dict]
    api_name: str
    records: dict | None  # the records fields of the body (``records_paths``), None if it has none
    embedded: bool  # decode_embedded may have something to add


def _clean_parse(plan: _Plan, payload: bytes) -> tuple[dict, dict] | None:
    """Header and body of a frame the plan's compiled parsers read exactly; None for any other."""
    io = BytesIO(payload)
    try:
        header = plan.header(io)
        body = plan.body(io)
    except Exception:  # noqa: BLE001 - the general path reads the frame again and says why
        return None
    return (header, body) if io.tell() == len(payload) else None


def _request_result(api_key: int, api_name: str, version: int, header: dict, body: dict) -> dict:
    """A decoded request as both paths give it (the general one may add what deviated)."""
    return {
        "api_key": api_key,
        "api_name": api_name,
        "api_version": version,
        "correlation_id": header["correlation_id"],
        "client_id": header.get("client_id"),
        "body": body,
    }


def _response_result(api_key: int, version: int, header: dict, body: dict) -> dict:
    """A decoded response as both paths give it (the general one may add what deviated)."""
    return {"api_key": api_key, "api_version": version, "correlation_id": header["correlation_id"], "body": body}


class Decoder:
    def __init__(self, registry: SpecRegistry, compiled: bool = True):
        self.registry = registry
        self.parsers = ParserCache(registry, compiled)
        self.tolerant = ParserCache(registry, compiled, tolerate_nulls=True)
        self._nesting = threading.local()
        self._records_paths: dict[tuple[str, int], dict] = {}  # (message, version) -> its records fields
        # Per (api key, version), of the versions the registry has only (so bounded by it):
        self._request_plans: dict[tuple[int, int], _Plan] = {}
        self._response_plans: dict[tuple[int, int], _Plan] = {}

    def _depth(self, response_of: tuple[int, int] | None = None) -> int:
        """How many frames around this one are decoding their embedded data (``response_of``: the
        api key and version of a response); more than ``MAX_NESTING`` is an error."""
        depth = getattr(self._nesting, "depth", 0)
        if depth >= MAX_NESTING:
            where: Where = _REQUEST
            if response_of is not None:
                where = {"direction": "response", "api_key": response_of[0], "api_version": response_of[1]}
            raise DecodeError(f"requests nested more than {MAX_NESTING} deep", offset=0, **where)
        return depth

    @contextmanager
    def _inside(self, depth: int) -> Iterator[None]:
        """Frames decoded in this block (embedded data) are one deeper than the frame at ``depth``."""
        self._nesting.depth = depth + 1
        try:
            yield
        finally:
            self._nesting.depth = depth

    # -- whole frames ------------------------------------------------------------------

    def decode_request(
        self,
        payload: bytes,
        *,
        protocol_type: str | None = None,
        lenient: bool = False,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    ) -> dict:
        """Decode one request frame (without its size prefix).

        ``lenient``: bytes left over after a body that otherwise decoded are reported as
        ``trailing_bytes`` in the result instead of raising (peers that pad or append junk), and
        a null where the spec allows none is read as null and reported in ``deviations``.
        ``max_decompressed_bytes``: what all ``records`` fields of the frame may decompress to.
        """
        depth = self._depth()
        if len(payload) >= 4:
            key_version = _API_KEY_VERSION.unpack_from(payload)
            plan = self._request_plans.get(key_version) or self._plan_for(True, *key_version)
            if plan is not None and (clean := _clean_parse(plan, payload)) is not None:
                header, body = clean
                result = _request_result(key_version[0], plan.api_name, key_version[1], header, body)
                self._finish(result, plan, "request", None, protocol_type, max_decompressed_bytes, depth)
                return result
        with self._inside(depth):
            return self._decode_request(payload, protocol_type, lenient, max_decompressed_bytes)

    def exact_response_bodies(self, payload: bytes, pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict]:
        """(api key, version) -> the body, of each of ``pairs`` whose compiled response parsers read
        ``payload`` (correlation id on) whole, with nothing left over. Records, embedded data and
        notes are left as they are in the bytes (``decode_response`` adds them). The header is
        read once per header version, the body at each pair from where it starts."""
        io = BytesIO(payload)
        size = len(payload)
        body_starts: dict[Callable, int | None] = {}
        found = {}
        for pair in pairs:
            plan = self._response_plans.get(pair) or self._plan_for(False, *pair)
            if plan is None:
                continue
            start = body_starts.get(plan.header, -1)
            if start == -1:
                io.seek(0)
                try:
                    plan.header(io)
                    start = io.tell()
                except Exception:  # noqa: BLE001 - not this header version's
                    start = None
                body_starts[plan.header] = start
            if start is None:
                continue
            io.seek(start)
            try:
                body = plan.body(io)
            except Exception:  # noqa: BLE001 - not this version's
                continue
            if io.tell() == size:
                found[pair] = body
        return found

    def _plan_for(self, request: bool, api_key: int, version: int) -> _Plan | None:
        """The plan of a request (else a response) of a version the registry has; None otherwise."""
        message = self.registry.request(api_key) if request else self.registry.response(api_key)
        if message is None or version not in message.valid_versions:
            return None
        if request:
            header = self.parsers.get("RequestHeader", request_header_version(message, version))
        else:
            header = self.parsers.get("ResponseHeader", response_header_version(message, version))
        plan = _Plan(
            header.parse_compiled,
            self.parsers.get(message.name, version).parse_compiled,
            message.api_name,
            self._paths_of(message.name, version) or None,
            api_key in _EMBEDDING,
        )
        (self._request_plans if request else self._response_plans)[(api_key, version)] = plan
        return plan

    def _finish(
        self, result: dict, plan: _Plan, direction: str, request, protocol_type, max_decompressed_bytes, depth: int
    ):
        """A clean frame's records fields and embedded data, as the general path adds them."""
        if plan.records is not None:
            self._records_along(result, plan.records, max_decompressed_bytes)
        if plan.embedded:
            with self._inside(depth):
                decode_embedded(self, result, direction, request=request, protocol_type=protocol_type)

    def _decode_request(self, payload: bytes, protocol_type, lenient: bool, max_decompressed_bytes: int) -> dict:
        if len(payload) < 4:
            raise DecodeError(f"request frame of {len(payload)} bytes is too short for a header", offset=0)
        api_key, version = _API_KEY_VERSION.unpack_from(payload)
        message = self.registry.request(api_key)
        if message is None:
            raise DecodeError(f"unknown api key {api_key}", api_key=api_key, api_version=version, offset=0)
        where = Where(api_key=api_key, api_name=message.api_name, api_version=version, direction="request")
        if version not in message.valid_versions:
            raise DecodeError(
                f"version {version} is not one of {message.api_name}'s ({message.valid_versions})", offset=2, **where
            )
        io = BytesIO(payload)
        header = self._parse(io, "RequestHeader", request_header_version(message, version), where)
        body, trailing, deviations = self._body(io, message.name, version, where, lenient)
        result = _request_result(api_key, message.api_name, version, header, body)
        if trailing:
            result["trailing_bytes"] = trailing
        if deviations:
            result["deviations"] = deviations
        self._records(result, message.name, version, max_decompressed_bytes)
        decode_embedded(self, result, "request", protocol_type=protocol_type)
        return result

    def decode_response(
        self,
        payload: bytes,
        api_key: int,
        api_version: int,
        *,
        request: dict | None = None,
        protocol_type: str | None = None,
        lenient: bool = False,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    ) -> dict:
        """Decode one response frame; ``request`` (its decoded request) gives embedded data context."""
        depth = self._depth((api_key, api_version))
        plan = self._response_plans.get((api_key, api_version)) or self._plan_for(False, api_key, api_version)
        if plan is not None and (clean := _clean_parse(plan, payload)) is not None:
            header, body = clean
            result = _response_result(api_key, api_version, header, body)
            self._finish(result, plan, "response", request, protocol_type, max_decompressed_bytes, depth)
            return result
        with self._inside(depth):
            return self._decode_response(
                payload, api_key, api_version, request, protocol_type, lenient, max_decompressed_bytes
            )

    def _decode_response(
        self,
        payload: bytes,
        api_key: int,
        api_version: int,
        request,
        protocol_type,
        lenient: bool,
        max_decompressed_bytes: int,
    ) -> dict:
        message = self.registry.response(api_key)
        where = Where(
            api_key=api_key,
            api_name=message.api_name if message else None,
            api_version=api_version,
            direction="response",
        )
        if message is None:
            raise DecodeError(f"unknown api key {api_key}", **where)
        known_version = api_version in message.valid_versions
        if not known_version and api_key != API_VERSIONS:
            raise DecodeError(
                f"version {api_version} is not one of {message.api_name}'s ({message.valid_versions})", **where
            )
        try:
            if not known_version:
                raise DecodeError("version unknown to these specs", offset=0, **where)
            result = self._response_at(payload, message, api_version, where)
        except DecodeError as first:
            result = self._recover(first, payload, message, api_version, where, lenient)
        self._records(result, message.name, result.get("body_version", api_version), max_decompressed_bytes)
        decode_embedded(self, result, "response", request=request, protocol_type=protocol_type)
        return result

    def records_of(self, result: dict, name: str, version: int, max_decompressed_bytes: int) -> None:
        """Decode the ``records`` fields of a body read in part (``prefix``): those it holds."""
        self._records(result, name, version, max_decompressed_bytes)

    def _records(self, result: dict, name: str, version: int, max_decompressed_bytes: int) -> None:
        """Decode the body's ``records`` fields, all within one decompression budget."""
        paths = self._paths_of(name, version)
        if paths:
            self._records_along(result, paths, max_decompressed_bytes)

    def _paths_of(self, name: str, version: int) -> dict:
        paths = self._records_paths.get((name, version))
        if paths is None:
            paths = self._records_paths[(name, version)] = records_paths(self.registry.resolved(name, version))
        return paths

    def _records_along(self, result: dict, paths: dict, max_decompressed_bytes: int) -> None:
        budget = DecompressionBudget(max_decompressed_bytes)
        decode_records_fields(self, result["body"], paths, budget)
        if budget.exhausted:
            cut = budget.note()
            result["note"] = f"{result['note']}; {cut}" if result.get("note") else cut

    def _recover(self, first: DecodeError, payload, message, api_version, where, lenient) -> dict:
        """A response that does not decode at its version: ApiVersions' v0 fallback, then leniency."""
        if message.api_key == API_VERSIONS and api_version != 0:
            # A broker answers an ApiVersions request of a version it does not support with a v0
            # body (error UNSUPPORTED_VERSION); Kafka's client then reads it as v0 (KIP-511).
            try:
                result = self._response_at(payload, message, 0, {**where, "api_version": 0})
            except DecodeError:
                pass
            else:
                result["body_version"] = 0
                result["note"] = f"ApiVersions v{api_version} response decoded as v0 (broker fallback): {first.reason}"
                return result
        if lenient and (isinstance(first, TrailingBytes) or _NOT_NULLABLE in first.reason):
            return self._response_at(payload, message, api_version, where, lenient=True)
        raise first

    def _response_at(self, payload, message, version, where, lenient: bool = False) -> dict:
        io = BytesIO(payload)
        header = self._parse(io, "ResponseHeader", response_header_version(message, version), where)
        body, trailing, deviations = self._body(io, message.name, version, where, lenient)
        result = _response_result(message.api_key, where["api_version"], header, body)
        if trailing:
            result["trailing_bytes"] = trailing
        if deviations:
            result["deviations"] = deviations
        return result

    def _body(self, io, name: str, version: int, where: Where, lenient: bool) -> tuple[dict, int, list[str]]:
        """The body, which must use every byte left. When ``lenient``, leftovers are counted
        instead, and a null where the spec has none is read as null (said in the deviations)."""
        start = io.tell()
        deviations: list[str] = []
        try:
            return self._parse(io, name, version, where, whole=True), 0, deviations
        except TrailingBytes as e:
            if not lenient:
                raise
            return e.value, e.left, deviations
        except DecodeError as e:
            if not lenient or _NOT_NULLABLE not in e.reason:
                raise
            deviations.append(f"{e.path or name}: {e.reason} (read as null, as clients do)")
        io.seek(start)
        try:
            return self._parse(io, name, version, where, whole=True, parsers=self.tolerant), 0, deviations
        except TrailingBytes as e:
            return e.value, e.left, deviations

    # -- one message at one version ---------------------------------------------------

    def parse_message(self, name: str, version: int, data: bytes, *, whole: bool = True) -> dict:
        """Decode ``data`` as message ``name`` at ``version`` (data messages, embedded bytes)."""
        where = Where(api_name=name, api_version=version, direction="data")
        result = {"body": self._parse(BytesIO(data), name, version, where, whole=whole)}
        self._records(result, name, version, DEFAULT_MAX_DECOMPRESSED_BYTES)
        return result["body"]

    def _parse(
        self,
        io: BytesIO,
        name: str,
        version: int,
        where: Where,
        whole: bool = False,
        parsers: ParserCache | None = None,
    ) -> dict:
        parser = (parsers or self.parsers).get(name, version)
        start = io.tell()
        try:
            value = parser.parse_compiled(io)
        except Exception as compiled_error:  # any failure is re-read below to say where
            io.seek(start)
            try:
                value = parser.interpreted._parse(io, None, "")
            except WireError as e:
                part = "" if name.endswith(("Request", "Response")) else f"{name}: "
                raise DecodeError(
                    f"{part}{e.reason}",
                    offset=e.offset,
                    path=e.dotted_path,
                    truncated=isinstance(e, Truncated),
                    **where,
                ) from e
            except Exception as e:
                raise DecodeError(f"{name}: {type(e).__name__}: {e}", offset=io.tell(), **where) from e
            # Both parsers read bytes through the same runtime, so this is a bug of ours: say so.
            raise DecodeError(
                f"{name}: compiled parser failed where the interpreted one did not: {compiled_error!r}",
                offset=start,
                **where,
            ) from compiled_error
        if whole:
            left = remaining(io)
            if left:
                raise TrailingBytes(
                    f"{left} bytes left after the {name} body", value=value, left=left, offset=io.tell(), **where
                )
        return value


@lru_cache(maxsize=8)
def decoder_for(specs: str | None = None, compiled: bool = True) -> Decoder:
    """One decoder per spec directory or krammar file per process (``None``: the bundled specs)."""
    return Decoder(registry_for(specs), compiled)


def decode_request(payload: bytes, **options) -> dict:
    return decoder_for().decode_request(bytes(payload), **options)


def decode_response(payload: bytes, api_key: int, api_version: int, **options) -> dict:
    return decoder_for().decode_response(bytes(payload), api_key, api_version, **options)
