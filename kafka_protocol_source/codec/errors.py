"""Errors raised while reading the wire: ``WireError`` inside the codec, ``DecodeError`` outside.

``WireError`` carries the byte offset where reading failed and collects the field path as it
unwinds through structs and arrays. ``DecodeError`` is the public one: api, version, offset,
path and reason, all as attributes and in its message.
"""

from __future__ import annotations

from typing import TypedDict

UNREAD = object()  # ``WireError.partial`` of a value nothing of which was read


class WireError(ValueError):
    def __init__(self, reason: str, offset: int):
        super().__init__(reason)
        self.reason = reason
        self.offset = offset
        self.path: list[str] = []
        # What the structs and arrays being read held when it was raised (the interpreted parser
        # sets it while unwinding): a frame the capture cut is read up to the cut (``Decoder.prefix``).
        self.partial: object = UNREAD

    def within(self, step: str) -> WireError:
        """Prepend one step (a field name or ``[i]``) of the path while unwinding."""
        self.path.insert(0, step)
        return self

    @property
    def dotted_path(self) -> str:
        return "".join(s if s.startswith("[") else f".{s}" for s in self.path).lstrip(".")


class Truncated(WireError):
    """The bytes ran out (or a length claims more than is left): more input could fix it."""


class Where(TypedDict, total=False):
    """Which message a DecodeError is about (keyword arguments of DecodeError)."""

    api_key: int | None
    api_name: str | None
    api_version: int | None
    direction: str


class DecodeError(ValueError):
    """A frame that cannot be decoded: says which api, version, byte offset and field."""

    def __init__(
        self,
        reason: str,
        *,
        api_key: int | None = None,
        api_name: str | None = None,
        api_version: int | None = None,
        direction: str = "request",
        offset: int | None = None,
        path: str = "",
        truncated: bool = False,
    ):
        self.reason = reason
        self.truncated = truncated
        self.api_key = api_key
        self.api_name = api_name
        self.api_version = api_version
        self.direction = direction
        self.offset = offset
        self.path = path
        where = f"{api_name or f'api {api_key}'} v{api_version} {direction}"
        at = f" at byte {offset}" if offset is not None else ""
        field = f" in {path}" if path else ""
        super().__init__(f"{where}{at}{field}: {reason}")


class TrailingBytes(DecodeError):
    """The body decoded but bytes were left over; ``value`` holds what was decoded."""

    def __init__(self, reason: str, *, value: dict, left: int, **where):
        super().__init__(reason, **where)
        self.value = value
        self.left = left
