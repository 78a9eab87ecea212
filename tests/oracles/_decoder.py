"""Access to the decoder under test, and the per-case hypothesis settings of the oracle suite."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Small per case: there are ~1,500 (api, version, direction) cases in all, and the suite must
# finish in a few minutes on two cores. Coverage comes from the number of cases, not examples.
# ORACLE_MAX_EXAMPLES raises it for a deeper, slower hunt (e.g. 200 before a release).
ORACLE_SETTINGS = settings(
    max_examples=int(os.environ.get("ORACLE_MAX_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    database=None,
)


def decoder():
    """The module under test. An import error fails every oracle case: it must never skip them."""
    import kafka_protocol_source as kps

    return kps


def request_header_version(api_key: int, version: int, flexible: bool) -> int:
    # ControlledShutdown v0 is the one request whose header has no client id (header v0);
    # every other request uses header v1, or v2 from its first flexible version (KIP-482).
    if api_key == 7 and version == 0:
        return 0
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    # ApiVersions responses always use header v0 so that a client that sent a version the
    # broker does not know can still read the error (KIP-511).
    if api_key == 18:
        return 0
    return 1 if flexible else 0


def api_name(message_name: str) -> str:
    return message_name.removesuffix("Request").removesuffix("Response")
