"""Topic ids to names, learned from the responses of a capture that carry both.

Newer Produce/Fetch (and ConsumerGroupHeartbeat) versions name topics by id only (KIP-516);
Metadata, CreateTopics and DescribeTopicPartitions responses say which name an id has.
"""

from __future__ import annotations

METADATA, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS = 3, 19, 75
TOPIC_NAMING_APIS = frozenset({METADATA, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS})
ZERO_UUID = "00000000-0000-0000-0000-000000000000"


class TopicNames:
    def __init__(self):
        self.by_id: dict[str, str] = {}

    def learn(self, exchange) -> None:
        if exchange.api_key in TOPIC_NAMING_APIS and exchange.response:
            for topic in exchange.response.get("topics") or ():
                topic_id, name = topic.get("topic_id"), topic.get("name")
                if topic_id and name and topic_id != ZERO_UUID:
                    self.by_id[topic_id] = name

    def name(self, topic_id: str | None) -> str | None:
        return self.by_id.get(topic_id) if topic_id and topic_id != ZERO_UUID else None
