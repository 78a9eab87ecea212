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
    push, pop = stack.append, stack.pop
    while stack:
        value = pop()
        if isinstance(value, list):
            for v in value:
                t = type(v)
                if t is dict or t is list:
                    push(v)
            continue
        for key, v in value.items():  # a dict: decoded bodies hold plain dicts and lists only
            t = type(v)
            if t is dict or t is list:
                if key not in _SKIP:
                    push(v)
            elif key == "error_code" and v:
                found.add(v)
    return sorted(found)


def error_names(codes) -> list[str]:
    return [error_name(c) for c in codes]
