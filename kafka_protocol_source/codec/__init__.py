"""Codec stage: Kafka message bodies from bytes, with parsers built from the message definitions.

Owns the construct primitives for Kafka's wire types (``constructs``, and ``runtime`` for the
readers compiled code calls), building a parser for one message at one version from the
resolved IR (``builder``), compiling and caching parsers per process (``cache``), the decoder
that reads request and response bodies with their headers, leniently where peers deviate
(``decoder``), embedded data such as Envelope requests (``embedded``) and the pass that decodes
``records`` fields after the body (``records_pass``, with the ``records`` stage).

Does not own the definitions (``spec``), record batches (``records``), framing or pairing
(``framing`` is handed a decoder through ``framing.decoding.BodyDecoder``), or Spark.
``python -m kafka_protocol_source.codec MESSAGE VERSION`` prints a parser's generated source.
"""
