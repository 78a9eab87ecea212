"""What a response says went wrong: every non-zero error code in it, and their names.

APIs report errors at the top level, per topic or per partition; ``error_codes`` walks the whole
decoded body (record batches excepted: they hold no error codes), so "which requests failed and
why" is one question for every api.
"""

from __future__ import annotations

from ..spec.error_codes import error_name

_SKIP = frozenset({"records"})  # record batches hold no error codes; do not walk them


def error_codes(body: dict) -> list[int]:
    found: set[int] = set()
    stack: list[dict | list] = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, v in value.items():
                if key == "error_code":
                    if v:
                        found.add(v)
                elif key not in _SKIP and isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, (dict, list)))
    return sorted(found)


def error_names(codes) -> list[str]:
    return [error_name(c) for c in codes]
