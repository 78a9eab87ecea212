"""Api keys the code itself names, and the sets of them that decide what a view reads.

The one home for these numbers (Kafka's ``ApiKeys.java``); everything else imports them. Which
versions of each exist, and their names, come from the definitions in ``specs/``.
"""

from __future__ import annotations

PRODUCE = 0
FETCH = 1
METADATA = 3
CONTROLLED_SHUTDOWN = 7
JOIN_GROUP = 11
SYNC_GROUP = 14
SASL_HANDSHAKE = 17
API_VERSIONS = 18
CREATE_TOPICS = 19
ENVELOPE = 58
DESCRIBE_TOPIC_PARTITIONS = 75

# Responses that name topics by id (KIP-516): what the records view learns id -> name from.
TOPIC_NAMING_APIS = frozenset({METADATA, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS})
# What the records view decodes: records themselves, and the names of the topics they are in.
RECORDS_VIEW_APIS = frozenset({PRODUCE, FETCH}) | TOPIC_NAMING_APIS
