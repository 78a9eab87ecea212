"""Parsers per (message, version), built lazily and cached per process.

Compiled parsers are not picklable (they live in a generated module), so nothing here is ever
shipped between processes: each executor builds what it needs on first use. The interpreted
parser of the same message is kept too; it is only used to say where a bad frame went wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..spec.ir import Struct
from ..spec.registry import SpecRegistry
from .builder import build_parser
from .constructs import Struct as ConstructStruct

_LENGTH_PREFIXED = frozenset({"array", "string", "bytes", "records"})


def all_nullable(struct: Struct) -> Struct:
    """``struct`` with every length-prefixed field nullable (structs keep their wire format)."""

    def field(f):
        element = all_nullable(f.element) if isinstance(f.element, Struct) else f.element
        inner = all_nullable(f.struct) if f.struct is not None else None
        return replace(f, nullable=f.nullable or f.kind in _LENGTH_PREFIXED, element=element, struct=inner)

    return replace(struct, fields=tuple(field(f) for f in struct.fields), tagged=tuple(field(f) for f in struct.tagged))


@dataclass(frozen=True, slots=True)
class Parser:
    name: str
    version: int
    interpreted: ConstructStruct
    parse_compiled: Callable  # (io) -> dict


class ParserCache:
    """``tolerate_nulls``: parsers that read a null (-1) length or count where the spec says the
    field is not nullable as null, for peers that send one (a lenient second reading)."""

    def __init__(self, registry: SpecRegistry, compiled: bool = True, tolerate_nulls: bool = False):
        self.registry = registry
        self.compiled = compiled
        self.tolerate_nulls = tolerate_nulls
        self._parsers: dict[tuple[str, int], Parser] = {}
        self._lock = threading.Lock()

    def get(self, name: str, version: int) -> Parser:
        parser = self._parsers.get((name, version))
        if parser is None:
            with self._lock:
                parser = self._parsers.get((name, version))
                if parser is None:
                    parser = self._parsers[(name, version)] = self._build(name, version)
        return parser

    def _build(self, name: str, version: int) -> Parser:
        struct = self.registry.resolved(name, version)
        interpreted = build_parser(all_nullable(struct) if self.tolerate_nulls else struct)
        if self.compiled:
            return Parser(name, version, interpreted, interpreted.compile_parser())
        return Parser(name, version, interpreted, lambda io: interpreted._parse(io, None, ""))
