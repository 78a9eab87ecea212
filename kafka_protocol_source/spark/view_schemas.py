"""Spark schemas of the views built in ``views/``: connections, groups and lag.

Field names are the builders' column tuples (``CONNECTION_COLUMNS``, ``GROUP_COLUMNS``,
``LAG_COLUMNS``), in their order; ``tests/spark/test_views.py`` holds the two together.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


def _fields(*pairs) -> StructType:
    return StructType([StructField(name, dtype) for name, dtype in pairs])


_S, _L, _I, _T, _D, _B = StringType(), LongType(), IntegerType(), TimestampType(), DoubleType(), BooleanType()
_PER_SIDE = [
    (f"{side}_{what}", _L)
    for what in (
        "packets",
        "bytes",
        "retransmissions",
        "conflicting_retransmissions",
        "copies",
        "out_of_order",
        "gaps",
        "bytes_missing",
    )
    for side in ("client", "broker")
]

CONNECTIONS_VIEW = _fields(
    ("capture_file", _S),
    ("connection_id", _S),
    ("client_address", _S),
    ("broker_address", _S),
    ("kafka", _B),
    ("first_packet_time", _T),
    ("last_packet_time", _T),
    ("duration_ms", _D),
    *_PER_SIDE,
    ("handshake_rtt_ms", _D),
    ("ended", _S),
    ("ended_by", _S),
    ("client_ids", ArrayType(_S)),
    ("api_names", ArrayType(_S)),
    ("exchanges", _L),
    ("exchanges_not_ok", _L),
    ("error_responses", _L),
    ("error_codes", ArrayType(ShortType())),
    ("error_names", ArrayType(_S)),
)

ASSIGNED_TOPIC = _fields(("topic", _S), ("topic_id", _S), ("partitions", ArrayType(_I)))
GROUP_MEMBER = _fields(
    ("member_id", _S),
    ("group_instance_id", _S),
    ("client_id", _S),
    ("client_address", _S),
    ("subscribed_topics", ArrayType(_S)),
    ("assignment", ArrayType(ASSIGNED_TOPIC)),
    ("left_time", _T),
)
REBALANCE_STEP = _fields(("time", _T), ("api_name", _S), ("member_id", _S), ("client_id", _S), ("error", _S))
COMMITTED_OFFSET = _fields(("topic", _S), ("partition", _I), ("offset", _L))

GROUPS_VIEW = _fields(
    ("capture_file", _S),
    ("group_id", _S),
    ("group_protocol", _S),
    ("generation_id", _I),
    ("protocol_type", _S),
    ("protocol_name", _S),
    ("leader", _S),
    ("coordinator", _S),
    ("members", ArrayType(GROUP_MEMBER)),
    ("member_count", _I),
    ("rebalance_start", _T),
    ("rebalance_end", _T),
    ("rebalance_ms", _D),
    ("rebalance_start_captured", _B),
    ("joins", _I),
    ("rebalance_steps", ArrayType(REBALANCE_STEP)),
    ("rebalance_errors", ArrayType(_S)),
    ("heartbeats", _I),
    ("heartbeat_errors", ArrayType(_S)),
    ("commits", _I),
    ("committed", ArrayType(COMMITTED_OFFSET)),
    ("ended", _S),
    ("ended_time", _T),
    ("ended_member", _S),
)

LAG_VIEW = _fields(
    ("capture_file", _S),
    ("connection_id", _S),
    ("client_id", _S),
    ("client_address", _S),
    ("broker_address", _S),
    ("request_time", _T),
    ("response_time", _T),
    ("api_version", ShortType()),
    ("replica_id", _I),
    ("isolation_level", _I),
    ("session_id", _I),
    ("incremental", _B),
    ("topic", _S),
    ("topic_id", _S),
    ("partition", _I),
    ("fetch_offset", _L),
    ("high_watermark", _L),
    ("last_stable_offset", _L),
    ("log_start_offset", _L),
    ("lag", _L),
    ("records", _I),
    ("error_code", ShortType()),
    ("error_name", _S),
)

VIEW_SCHEMAS = {"connections": CONNECTIONS_VIEW, "groups": GROUPS_VIEW, "lag": LAG_VIEW}
