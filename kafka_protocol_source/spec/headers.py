"""Which request/response header version a message uses.

Kafka derives the header version from whether the body version is flexible (KIP-482: flexible
requests use request header v2, flexible responses response header v1), with two exceptions
(ApiKeys.java, requestHeaderVersion / responseHeaderVersion):

* ApiVersions responses always use response header v0, so that a client that sent a version
  the broker does not know can still read the answer (KIP-511).
* ControlledShutdown v0 requests use request header v0, which has no client id.
"""

from __future__ import annotations

from .api_keys import API_VERSIONS, CONTROLLED_SHUTDOWN
from .ir import MessageDef


def request_header_version(request: MessageDef, version: int) -> int:
    if request.api_key == CONTROLLED_SHUTDOWN and version == 0:
        return 0
    return 2 if version in request.flexible_versions else 1


def response_header_version(response: MessageDef, version: int) -> int:
    if response.api_key == API_VERSIONS:
        return 0
    return 1 if version in response.flexible_versions else 0
