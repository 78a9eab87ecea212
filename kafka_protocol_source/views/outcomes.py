"""What a response says went wrong: every non-zero error code in it, and their names.

APIs report errors at the top level, per topic or per partition; ``error_codes`` walks the whole
decoded body (record batches excepted: they hold no error codes), so "which requests failed and
why" is one question for every api. ``ResponseErrorCodes`` gives the same answer by looking only
where the spec of the response's version has ``error_code`` fields, and walks the whole body when
it is not what that spec holds (decoded at another version, or with structures the decoder
added beside the spec's fields, such as an Envelope's inner response).
"""

from __future__ import annotations

from functools import lru_cache

from ..framing.model import body_cut
from ..spec.error_codes import error_name
from ..spec.field_paths import FieldPaths, field_paths
from ..spec.ir import Field
from ..spec.registry import SpecRegistry

_SKIP = frozenset({"records"})  # record batches hold no error codes; do not walk them
_ERROR_CODE = "error_code"


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
            elif key == _ERROR_CODE and v:
                found.add(v)
    return sorted(found)


def exchange_error_codes(ex, response_codes: ResponseErrorCodes | None = None) -> list[int] | None:
    """The error codes of ``ex``'s response, None without one: through the spec with
    ``response_codes``, else by a walk of the whole body."""
    if not ex.response:
        return None
    if response_codes is None:
        codes = error_codes(ex.response)
    else:
        codes = response_codes.codes(ex.api_key, ex.api_version, ex.response)
    if not codes and body_cut(ex, "response"):
        return None  # (none in the part the capture kept: not known to be none)
    return codes


def error_names(codes) -> list[str]:
    return [error_name(c) for c in codes]


class ResponseErrorCodes:
    """``codes(api_key, api_version, body)``: ``error_codes(body)``, found through the paths the
    registry's spec of that response version gives (worked out once per version)."""

    def __init__(self, registry: SpecRegistry):
        self.registry = registry
        self._known: dict[tuple[int, int], tuple[FieldPaths, int] | None] = {}

    def codes(self, api_key, api_version, body: dict) -> list[int]:
        key = (api_key, api_version)
        try:
            known = self._known[key]
        except KeyError:
            known = self._known[key] = self._paths(api_key, api_version)
        if known is None or len(body) != known[1]:
            return error_codes(body)
        found: set[int] = set()
        _collect(body, known[0], found)
        return sorted(found)

    def _paths(self, api_key, api_version) -> tuple[FieldPaths, int] | None:
        """The paths, and the number of top-level fields a body of the spec has."""
        message = self.registry.response(api_key) if type(api_key) is int else None
        if message is None or type(api_version) is not int or api_version not in message.valid_versions:
            return None
        struct = self.registry.resolved(message.name, api_version)
        return field_paths(struct, _is_error_code), len(struct.fields) + len(struct.tagged)


@lru_cache(maxsize=8)
def response_error_codes(registry: SpecRegistry) -> ResponseErrorCodes:
    """One per registry and process: the readers a Spark worker runs in turn share what it learned."""
    return ResponseErrorCodes(registry)


def _is_error_code(field: Field) -> bool:
    return field.name == _ERROR_CODE


def _collect(value: dict, paths: FieldPaths, found: set[int]) -> None:
    for name, below in paths.items():
        v = value.get(name)
        if below is None:
            if v and type(v) is int:
                found.add(v)
        elif type(v) is dict:
            _collect(v, below, found)
        elif type(v) is list:
            for item in v:
                if type(item) is dict:
                    _collect(item, below, found)
