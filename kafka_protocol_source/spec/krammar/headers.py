"""A definition's first line: ``Name =>`` and its modifiers, read into a ``Definition``.

Requests: ``key N, max version M`` first (the seed), then in this order the optional
``min version K``, ``flexible vN+`` (franz-go), ``latest unstable``, ``deprecated vR``,
``listeners a b`` (extensions for the IR), and one of ``admin`` / ``group coordinator`` /
``txn coordinator`` (the seed). Responses take no modifier. ``not top level`` comes first for
every other struct, then ``with version field`` or ``no encoding`` (the seed), then the
extensions ``data`` / ``header`` with ``max version``, ``min version`` and ``flexible``, or
``for A B`` naming the messages a shared struct belongs to. A definition with no modifiers at all
(the seed's ``SimpleType =>`` examples) is a plain named struct.
"""

from __future__ import annotations

import re
from typing import NoReturn

from .syntax import Definition, Fail, KrammarError, Position
from .words import MAX_INT16, VERSIONS, parse_versions

_HEADER = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9]*) =>(?: (?P<mods>\S.*))?")
_ROUTING = ("admin", "group coordinator", "txn coordinator")

# (attribute, pattern) in the order they may appear; a pattern's group 1 is the value.
_VERSIONED = (
    ("max_version", re.compile(r"max version ([0-9]+)")),
    ("min_version", re.compile(r"min version ([0-9]+)")),
    ("flexible", re.compile(rf"flexible ({VERSIONS})")),
)
_REQUEST = (
    ("api_key", re.compile(r"key ([0-9]+)")),
    *_VERSIONED,
    ("latest_unstable", re.compile(r"(latest unstable)")),
    ("deprecated", re.compile(rf"deprecated ({VERSIONS})")),
    ("listeners", re.compile(r"listeners ([A-Za-z]+(?: [A-Za-z]+)*)")),
    ("routing", re.compile(r"(admin|group coordinator|txn coordinator)")),
)
_STRUCT = (
    ("encoding", re.compile(r"(with version field|no encoding)")),
    ("message_kind", re.compile(r"(data|header)")),
    *_VERSIONED,
    ("owners", re.compile(r"for ([A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*)*)")),
)


def parse_header(line: str, number: int, comment: tuple[str, ...], source: str) -> Definition:
    def fail(message: str, column: int) -> NoReturn:
        raise KrammarError(message, number, column + 1, source)

    match = _HEADER.fullmatch(line)
    if match is None:
        named = re.match(r"[A-Za-z][A-Za-z0-9]*", line)
        if named and line[named.end() :].startswith(":"):
            fail("top-level definitions have no colon after their name; only fields do", named.end())
        fail(f"expected a definition 'Name =>' at the start of the line, found {line!r}", 0)
    name, mods = match.group("name"), match.group("mods")
    at = Position(number, 1)
    items = _split(mods, match.start("mods")) if mods else []
    if items and items[0][0] == "not top level":
        values = _match_in_order(items[1:], _STRUCT, fail, "not top level")
        return _struct(name, at, comment, values, items, fail)
    if name.endswith("Response"):
        if items:
            fail("a response takes no modifiers: it shares its request's", items[0][1])
        return Definition(name, "response", at, comment=comment)
    if not items:
        return Definition(name, "struct", at, comment=comment)  # the seed's plain ``SimpleType =>``
    if not items[0][0].startswith("key "):
        fail(
            f"unknown first modifier {items[0][0]!r}: a request starts with 'key N, max version M', "
            "any other struct with 'not top level'",
            items[0][1],
        )
    if not name.endswith("Request"):
        fail(f"a request's name ends in Request; {name} does not (or mark it 'not top level')", 0)
    values = _match_in_order(items, _REQUEST, fail, "a request")
    if "max_version" not in values:
        fail("a request's second modifier is 'max version M'", items[1][1] if len(items) > 1 else len(line))
    _check_numbers(values, items, fail)
    return Definition(
        name,
        "request",
        at,
        comment=comment,
        api_key=int(values["api_key"]),
        max_version=int(values["max_version"]),
        min_version=int(values.get("min_version", 0)),
        flexible=parse_versions(values["flexible"]) if "flexible" in values else None,
        latest_unstable="latest_unstable" in values,
        deprecated=parse_versions(values["deprecated"]) if "deprecated" in values else None,
        listeners=tuple(values["listeners"].split()) if "listeners" in values else (),
        routing=values.get("routing"),
    )


def _struct(name, at, comment, values, items, fail: Fail) -> Definition:
    kind = values.get("message_kind")
    versioned = [k for k in ("max_version", "min_version", "flexible") if k in values]
    if kind is None and versioned:
        column = next(c for text, c in items if text.startswith(("max version", "min version", "flexible")))
        fail(f"only a 'data' or 'header' struct has versions ({versioned[0].replace('_', ' ')})", column)
    if kind is not None and "max_version" not in values:
        fail(f"a {kind} struct needs 'max version M'", items[-1][1])
    if kind is not None and "owners" in values:
        fail(f"a {kind} struct is a message of its own; 'for' is for shared structs", items[-1][1])
    owners = values.get("owners", "").split()
    if len(set(owners)) != len(owners):
        fail(f"'for' names a message twice: {values['owners']}", items[-1][1])
    _check_numbers(values, items, fail)
    encoding = values.get("encoding")
    owners_at = next((c + len("for ") for text, c in items if text.startswith("for ")), 0)
    return Definition(
        name,
        "struct",
        at,
        comment=comment,
        message_kind=kind,
        max_version=int(values["max_version"]) if "max_version" in values else None,
        min_version=int(values.get("min_version", 0)),
        flexible=parse_versions(values["flexible"]) if "flexible" in values else None,
        with_version_field=encoding == "with version field",
        no_encoding=encoding == "no encoding",
        owners=tuple(values["owners"].split()) if "owners" in values else (),
        owners_column=owners_at + 1,
    )


def _check_numbers(values: dict[str, str], items, fail: Fail) -> None:
    """Keys and versions are int16 on the wire; a version range must not be empty."""

    def column(prefix: str) -> int:
        return next(c for text, c in items if text.startswith(prefix))

    for key, prefix in (("api_key", "key "), ("max_version", "max version"), ("min_version", "min version")):
        if key in values and int(values[key]) > MAX_INT16:
            fail(f"{prefix.strip()} {values[key]} does not fit in an int16", column(prefix))
    if int(values.get("min_version", 0)) > int(values.get("max_version", MAX_INT16)):
        fail(f"min version {values['min_version']} is above max version {values['max_version']}", column("min version"))


def _split(mods: str, start: int) -> list[tuple[str, int]]:
    """Comma-separated modifiers with their 0-based columns."""
    items, column = [], start
    for item in mods.split(", "):
        items.append((item, column))
        column += len(item) + 2
    return items


def _match_in_order(items, patterns, fail: Fail, what: str) -> dict[str, str]:
    values: dict[str, str] = {}
    next_allowed = 0
    for text, column in items:
        for i, (key, pattern) in enumerate(patterns):
            match = pattern.fullmatch(text)
            if match is None:
                continue
            if i < next_allowed:
                fail(f"modifier {text!r} is out of order or repeated for {what}", column)
            if key == "routing" and text not in _ROUTING:
                break
            values[key] = match.group(1)
            next_allowed = i + 1
            break
        else:
            if text.startswith("flexible") or text.startswith("deprecated"):
                fail(f"{text!r}: versions are written like v3+ or v8-v9", column)
            fail(f"unknown modifier {text!r} for {what}", column)
    return values
