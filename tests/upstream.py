"""Where the tests find Apache Kafka's own JSON message definitions (the upstream the project's
``specs/`` is imported from), and the skip mark for tests that need them.

They are not part of the checkout. The folder is ``$KAFKA_WIRE_UPSTREAM_SPECS`` when set, else
``shared/`` beside the checkout (the workspace layout CI clones into); it holds
``kafka-message-specs`` (Kafka trunk of Oct 2024, kio 0.5.0's vintage) and
``kafka-message-specs-4x``. Without them, the tests that read them are skipped and say why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "KAFKA_WIRE_UPSTREAM_SPECS"
FOLDER = Path(os.environ.get(ENV) or Path(__file__).resolve().parents[2] / "shared")
OCT_2024 = FOLDER / "kafka-message-specs"
KAFKA_4X = FOLDER / "kafka-message-specs-4x"

needs_upstream = pytest.mark.skipif(
    not (OCT_2024.is_dir() and KAFKA_4X.is_dir()),
    reason=f"Apache Kafka's JSON message definitions not found in {FOLDER} (set {ENV} to the folder holding "
    "kafka-message-specs and kafka-message-specs-4x)",
)
