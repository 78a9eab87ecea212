"""The krammar front-end: franz-go's compact text grammar for Kafka messages, lowered into the
same IR as Kafka's JSON definitions (``parser`` -> ``syntax`` tree -> ``lower`` -> ``spec.ir``),
and the renderer back (``render``). The grammar and our extensions are in specs/README.md.
"""

from .lower import load_krammar, lower_document, lower_shared_structs
from .parser import parse_krammar
from .render import RenderError, render_krammar
from .syntax import KrammarError

__all__ = [
    "KrammarError",
    "RenderError",
    "load_krammar",
    "lower_document",
    "lower_shared_structs",
    "parse_krammar",
    "render_krammar",
]
