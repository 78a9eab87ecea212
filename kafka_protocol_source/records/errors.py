"""The records stage's own exception type.

Owns `RecordsError` only. Inside the stage it signals bad input; `decode_records` turns it
into a batch's `error` string, so callers never see it raised for bad bytes.
"""


class RecordsError(ValueError):
    """Bytes of a `records` field that cannot be decoded as claimed."""
