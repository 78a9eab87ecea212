"""Spec names to the snake_case keys used in decoded values.

``TopicName`` -> ``topic_name``, ``ThrottleTimeMs`` -> ``throttle_time_ms``,
``isKRaftController`` -> ``is_k_raft_controller`` (the same rule kio uses, so the two agree).
"""

from __future__ import annotations

import re
from functools import cache

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@cache
def snake_case(name: str) -> str:
    return _BOUNDARY.sub("_", name).lower()
