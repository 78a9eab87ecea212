"""The views built from a whole capture session (connections, groups, lag): which exchanges each
needs, whether a capture may be split for it, and the rows of one partition.

``connections`` and ``groups`` need every connection of a session at once (a group's members
talk to the coordinator on several connections; a connection's TCP facts come from a second
pass over the packets), so such a read is never split by connection; ``lag`` rows are per Fetch
and split like the records view, every partition also reading the responses that name topic ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ..codec.decoder import decoder_for
from ..spec.api_keys import PRODUCE
from ..spec.registry import registry_for
from ..views.connections import connection_rows
from ..views.groups import GROUP_APIS, group_rows
from ..views.lag import FETCH, lag_rows
from ..views.outcomes import response_error_codes
from ..views.topic_names import TOPIC_NAMING_APIS, TopicNames
from .options import ReadOptions
from .view_schemas import VIEW_SCHEMAS

DERIVED_VIEWS = frozenset(VIEW_SCHEMAS)
WHOLE_SESSION_VIEWS = frozenset({"connections", "groups"})
_APIS = {"connections": None, "groups": GROUP_APIS | TOPIC_NAMING_APIS, "lag": frozenset({FETCH}) | TOPIC_NAMING_APIS}


def apis_needed(view: str, asked: frozenset[int] | None) -> frozenset[int] | None:
    """The api keys to decode for ``view`` (``asked``: the ``apis`` option, which narrows them)."""
    needed = _APIS[view]
    if needed is None:
        return asked
    return needed if asked is None else needed & (asked | TOPIC_NAMING_APIS)


def view_row_apis(view: str) -> frozenset[int] | None:
    """The api keys whose exchanges make rows of ``view`` (those the read mode drops or fails on),
    where it also reads others for topic names only; None: every exchange it reads is its own."""
    return _ROW_APIS.get(view)


_ROW_APIS = {"records": frozenset({PRODUCE, FETCH}), "lag": frozenset({FETCH}), "groups": GROUP_APIS}


def shared_apis(view: str) -> frozenset[int] | None:
    """What a split read of ``view`` needs from the connections of other partitions (the records
    and lag views name topics from every connection's Metadata); None: nothing. A slice given
    its own connections' records learns them from a naming read if needed (``naming_pass``); a
    slice of a capture the index pass cannot read decodes them on the way."""
    return TOPIC_NAMING_APIS if view in ("records", "lag") else None


def derived_rows(
    view: str, exchanges: Iterable, paths: Sequence[str], options: ReadOptions, names: TopicNames | None = None
) -> Iterator[dict]:
    if view == "connections":
        return connection_rows(
            exchanges,
            paths,
            ports=options.ports,
            max_buffered_bytes=options.max_buffered_bytes,
            response_codes=response_error_codes(registry_for(options.specs)),
        )
    if view == "groups":
        return group_rows(exchanges, decoder_for(options.specs))
    return lag_rows(exchanges, names)
