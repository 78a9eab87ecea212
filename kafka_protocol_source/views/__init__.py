"""Views: pyspark-free rows built from what the stages below produce, one module per view.

* ``exchanges``: one row per request/response exchange (the default view), with its outcome and
  the error codes found anywhere in the response.
* ``records``: one row per record produced or fetched, topics named from the capture's metadata.
* ``connections``: one row per TCP connection, joining ``tcp.stats`` (packets, bytes,
  retransmissions, gaps, handshake, ending) with the Kafka exchanges read on it.
* ``groups``: one row per consumer group generation (classic protocol) or epoch (KIP-848), from
  the group coordinator exchanges.
* ``lag``: one row per consumer Fetch and partition: the offset asked for beside the high
  watermark the broker reported.

Shared here: ``TopicNames`` (topic ids to names, from responses that carry both) and
``error_codes`` (every non-zero error code in a response), and ``variant`` (decoded bodies in
Spark's VARIANT binary format, a byte format that needs no pyspark). The Spark layer turns these rows into
Arrow batches; nothing here imports pyspark.
"""
