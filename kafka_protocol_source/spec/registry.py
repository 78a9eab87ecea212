"""The set of message definitions one decoder works from.

A registry is built from the project's ``specs/`` (the default, shipped inside the package), any
directory of upstream Kafka JSON definitions, or one krammar file (``specs/kafka.krammar`` or a
user's own), so a newer or forked protocol decodes without a release of ours. Resolution at a
version is cached per registry.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .headers import response_header_version
from .ir import MessageDef, Struct
from .json_frontend import load_message
from .krammar import load_krammar
from .resolve import resolve

DEFAULT_SPECS = Path(__file__).resolve().parent.parent / "specs"
HEADERS = ("RequestHeader", "ResponseHeader")
# Kafka's apis have a few dozen versions at most; an open-ended range ("3+") is listed this far.
MAX_LISTED_VERSION = 63


class SpecRegistry:
    def __init__(self, messages: dict[str, MessageDef], source: str = ""):
        self.messages = messages
        self.source = source
        self._requests: dict[int, MessageDef] = {
            m.api_key: m for m in messages.values() if m.kind == "request" and m.api_key is not None
        }
        self._responses = {m.api_key: m for m in messages.values() if m.kind == "response"}
        self._response_versions: tuple[tuple[int, int], ...] | None = None
        self._response_layouts: dict[tuple[int, int], tuple[int, ...]] | None = None
        self._tagged: dict[tuple[int, int], frozenset[str]] = {}
        self._resolved: dict[tuple[str, int], Struct] = {}

    @classmethod
    def from_path(cls, path: str | Path) -> SpecRegistry:
        """A directory of JSON definitions, or a krammar file."""
        path = Path(path)
        if path.is_file():
            return cls.from_krammar(path)
        if not path.is_dir():
            raise FileNotFoundError(f"no such spec directory or krammar file: {path}")
        return cls.from_directory(path)

    @classmethod
    def from_krammar(cls, path: str | Path) -> SpecRegistry:
        messages = load_krammar(path)
        missing = [name for name in HEADERS if name not in messages]
        if missing:
            raise ValueError(
                f"{path} does not define {' or '.join(missing)}, which every frame starts with: "
                "copy their definitions from the bundled specs/kafka.krammar"
            )
        return cls(messages, str(path))

    @classmethod
    def from_directory(cls, directory: str | Path) -> SpecRegistry:
        directory = Path(directory)
        files = sorted(directory.glob("*.json"))
        if not files:
            raise FileNotFoundError(
                f"no message definitions (*.json) in {directory} (a krammar file is given by its own path)"
            )
        messages = {}
        for path in files:
            message = load_message(path)
            messages[message.name] = message
        return cls(messages, str(directory))

    def api_keys(self) -> list[int]:
        return sorted(self._requests)

    def request(self, api_key: int) -> MessageDef | None:
        return self._requests.get(api_key)

    def response(self, api_key: int) -> MessageDef | None:
        return self._responses.get(api_key)

    def message(self, name: str) -> MessageDef:
        try:
            return self.messages[name]
        except KeyError:
            raise KeyError(f"no message definition named {name!r} in {self.source}") from None

    def api_name(self, api_key: int) -> str | None:
        message = self._requests.get(api_key)
        return message.api_name if message else None

    def api_key_by_name(self, name: str) -> int | None:
        for key, message in self._requests.items():
            if message.api_name.lower() == name.lower():
                return key
        return None

    def response_versions(self) -> tuple[tuple[int, int], ...]:
        """Every (api key, version) with a response definition (an open-ended range, "3+", up to
        ``MAX_LISTED_VERSION``): first the apis clients send to brokers (their request's listeners
        name "broker", or none are given), then those between brokers and controllers only."""
        if self._response_versions is None:

            def between_servers(api_key: int) -> bool:
                listeners = self._requests[api_key].listeners
                return bool(listeners) and "broker" not in listeners

            pairs = []
            for api_key in sorted(self._requests, key=lambda k: (between_servers(k), k)):
                response = self._responses.get(api_key)
                if response is not None:
                    low, high = response.valid_versions.low, min(response.valid_versions.high, MAX_LISTED_VERSION)
                    pairs += [(api_key, version) for version in range(low, high + 1)]
            self._response_versions = tuple(pairs)
        return self._response_versions

    def response_layouts(self) -> dict[tuple[int, int], tuple[int, ...]]:
        """``response_versions`` grouped: (api key, first version) -> the versions whose responses
        have the same header version and the same fields in the same order, so that they read
        any bytes alike."""
        if self._response_layouts is None:
            groups: dict[tuple[int, int, str], list[int]] = {}
            for api_key, version in self.response_versions():
                message = self._responses[api_key]
                layout = repr(self.resolved(message.name, version))  # (Struct holds lists: not hashable)
                groups.setdefault((api_key, response_header_version(message, version), layout), []).append(version)
            self._response_layouts = {(key[0], versions[0]): tuple(versions) for key, versions in groups.items()}
        return self._response_layouts

    def response_tagged_fields(self, api_key: int, version: int) -> frozenset[str]:
        """The names (snake_case, as in decoded bodies) of the tagged fields at any depth of this
        response version: what a version may know that another laid out alike keeps unknown."""
        found = self._tagged.get((api_key, version))
        if found is None:
            names: set[str] = set()
            todo = [self.resolved(self._responses[api_key].name, version)]
            while todo:
                struct = todo.pop()
                names.update(field.name for field in struct.tagged)
                for field in (*struct.fields, *struct.tagged):
                    todo += [s for s in (field.struct, field.element) if isinstance(s, Struct)]
            found = self._tagged[(api_key, version)] = frozenset(names)
        return found

    def resolved(self, name: str, version: int) -> Struct:
        key = (name, version)
        struct = self._resolved.get(key)
        if struct is None:
            struct = self._resolved[key] = resolve(self.message(name), version)
        return struct


@lru_cache(maxsize=8)
def registry_for(specs: str | None = None) -> SpecRegistry:
    """One registry per spec directory or krammar file per process (``None``: the bundled specs)."""
    return SpecRegistry.from_path(specs or DEFAULT_SPECS)
