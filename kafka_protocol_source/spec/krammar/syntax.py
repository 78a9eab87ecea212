"""The krammar syntax tree: what a definitions file says, before it is lowered into the IR.

Kept separate from the IR because krammar says things the IR has no place for (comments,
name hints as written, ``admin`` / coordinator routing, ``with version field``), and because
errors found while lowering still need the line and column each node came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from ..versions import VersionRange

# What a parsing step is handed to report an error at (message, column or offset): it raises.
Fail = Callable[[str, int], NoReturn]


class KrammarError(ValueError):
    """A definitions file that breaks a grammar rule, with where it does."""

    def __init__(self, message: str, line: int, column: int, source: str = "<krammar>"):
        super().__init__(f"{source}:{line}:{column}: {message}")
        self.reason, self.line, self.column, self.source = message, line, column, source


@dataclass(frozen=True, slots=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True, slots=True)
class TypeSpec:
    """The right-hand side of ``Name: type``.

    ``base`` is a primitive name, a named struct, ``=>`` (an anonymous struct whose fields follow,
    indented) or ``length-field-minus``. ``array`` is ``""``, ``"array"``, ``"nullable"`` (a
    nullable array) or ``"varint"`` (varint count). ``nullable`` is about the value itself
    (``nullable-string``, ``nullable=>``) or, for arrays, the array; ``nullable_versions`` is the
    explicit ``-vN+`` range when one is written.
    """

    base: str
    at: Position
    array: str = ""
    nullable: bool = False
    nullable_versions: VersionRange | None = None
    hint: str = ""
    default: str | None = None
    length_field: str = ""
    length_minus: int = 0
    fields: tuple[FieldSpec, ...] = ()

    @property
    def anonymous(self) -> bool:
        return self.base == "=>"


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    type: TypeSpec
    at: Position
    versions: VersionRange | None = None  # None: no version comment, so every version
    tag: int | None = None
    tagged_versions: VersionRange | None = None  # None: tagged in all of the field's versions
    flexible_versions: VersionRange | None = None
    map_key: bool = False
    entity_type: str | None = None
    ignorable: bool = False
    zero_copy: bool = False
    comment: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Definition:
    """One top-level definition: a request, the response after it, or a ``not top level`` struct.

    A ``not top level`` struct is either a named struct (shared by the messages in ``owners``, or,
    with no owners, by any message that refers to it) or, with ``message_kind`` ``data`` or
    ``header``, a versioned message of its own (consumer protocol data, request headers).
    """

    name: str
    role: str  # "request", "response" or "struct"
    at: Position
    fields: tuple[FieldSpec, ...] = ()
    comment: tuple[str, ...] = ()
    api_key: int | None = None
    max_version: int | None = None
    min_version: int = 0
    flexible: VersionRange | None = None
    latest_unstable: bool = False
    deprecated: VersionRange | None = None
    listeners: tuple[str, ...] = ()
    routing: str | None = None  # "admin", "group coordinator" or "txn coordinator"
    with_version_field: bool = False
    no_encoding: bool = False
    message_kind: str | None = None  # "data" or "header" for versioned not-top-level messages
    owners: tuple[str, ...] = ()  # "for A B": the messages this struct belongs to
    owners_column: int = 1  # where the first owner's name starts


@dataclass(frozen=True, slots=True)
class Document:
    definitions: tuple[Definition, ...]
    comment: tuple[str, ...] = ()  # the file's leading comment block, if one stands alone
    source: str = "<krammar>"
