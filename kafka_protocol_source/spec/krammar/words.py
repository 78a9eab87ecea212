"""krammar's spelling of the small things: names, version ranges, the primitive type names.

Versions are written ``v3+`` or ``v8-v9`` (the seed's ``v\\d+(\\+|-v\\d+)``), and ``none`` where
an extension needs an empty range; ``spec.versions`` spells the same ranges ``3+`` / ``8-9``.
"""

from __future__ import annotations

import re

from ..ir import ALWAYS_NULLABLE, INTEGERS, PRIMITIVES  # noqa: F401 - krammar spells them as the IR does
from ..versions import NONE, OPEN_END, VersionRange

NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
VERSIONS = r"v[0-9]+(?:\+|-v[0-9]+)"
_VERSIONS = re.compile(r"v([0-9]+)(?:(\+)|-v([0-9]+))")

# Type names a field may use are the IR's (``ir.PRIMITIVES``); nullable-string / nullable-bytes
# are "nullable-" + string / bytes.
NULLABLE_PRIMITIVES = frozenset({"string", "bytes", "records"})
ALL = VersionRange(0, OPEN_END)  # a field with no version comment
MAX_INT16 = OPEN_END


def parse_versions(text: str) -> VersionRange | None:
    """``v3+`` -> 3+, ``v8-v9`` -> 8-9, ``none`` -> none; None if ``text`` is not a range."""
    if text == "none":
        return NONE
    match = _VERSIONS.fullmatch(text)
    if match is None:
        return None
    low = int(match.group(1))
    high = OPEN_END if match.group(2) else int(match.group(3))
    if high < low or max(low, high) > OPEN_END:  # versions are int16
        return None
    return VersionRange(low, high)


def format_versions(versions: VersionRange) -> str:
    if versions.empty:
        return "none"
    if versions.high > OPEN_END:
        raise ValueError(f"versions {versions} go beyond int16")
    if versions.high == OPEN_END:
        return f"v{versions.low}+"
    return f"v{versions.low}-v{versions.high}"


def default_struct_name(parent: str, field: str, is_array: bool) -> str:
    """The name an anonymous struct gets without a hint (franz-go's rule): the enclosing struct's
    name plus the field's, made singular for arrays by dropping one trailing ``s``."""
    if is_array and field.endswith("s"):
        field = field[:-1]
    return parent + field
