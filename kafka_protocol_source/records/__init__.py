"""records stage: the bytes of a Kafka `records` field as plain Python values.

Produce requests and Fetch responses carry message sets (magic 0 and 1) or record batches
(magic 2), possibly compressed. `decode_records` turns them into one dict per batch with
its records (see shapes for the exact keys); `RecordsError` is the stage's internal error
type, reported as data rather than raised. Knows nothing of frames, specs or Spark.
"""

from .budget import DEFAULT_MAX_DECOMPRESSED_BYTES, DecompressionBudget
from .errors import RecordsError
from .reader import decode_records

__all__ = ["DEFAULT_MAX_DECOMPRESSED_BYTES", "DecompressionBudget", "RecordsError", "decode_records"]
