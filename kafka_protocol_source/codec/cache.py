"""Parsers per (message, version), built lazily and cached per process.

Compiled parsers are not picklable (they live in a generated module), so nothing here is ever
shipped between processes: each executor builds what it needs on first use. The interpreted
parser of the same message is kept too; it is only used to say where a bad frame went wrong.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from ..spec.registry import SpecRegistry
from .builder import build_parser
from .constructs import Struct


@dataclass(frozen=True, slots=True)
class Parser:
    name: str
    version: int
    interpreted: Struct
    parse_compiled: Callable  # (io) -> dict


class ParserCache:
    def __init__(self, registry: SpecRegistry, compiled: bool = True):
        self.registry = registry
        self.compiled = compiled
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
        interpreted = build_parser(self.registry.resolved(name, version))
        if self.compiled:
            parse = interpreted.compile().parsefunc
            return Parser(name, version, interpreted, lambda io: parse(io, None))
        return Parser(name, version, interpreted, lambda io: interpreted._parse(io, None, ""))
