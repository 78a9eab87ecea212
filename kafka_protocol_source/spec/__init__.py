"""Spec stage: what Kafka's messages are, as data, with no idea of how bytes are read.

Owns version ranges (``versions``), the intermediate representation of messages (``ir``), the
two front-ends that produce it (Kafka's JSON definitions in ``json_frontend`` and the krammar
grammar in ``krammar``), resolving a message at one version (``resolve``), the registry over a
set of definitions (``registry``), the header-version rules (``headers``), api keys
(``api_keys``), error codes (``error_codes``), field naming (``names``) and the importer that
writes ``specs/`` from Apache Kafka's files (``importer``).

Does not own parsing bytes (``codec``, which builds parsers from this IR) and imports neither
construct nor any other stage (an import-linter contract says so).
"""
