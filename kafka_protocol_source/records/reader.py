"""The walk over a `records` field: from one batch to the next, by magic.

Owns `decode_records`: it reads each entry's offset, length and magic (the magic sits at
byte 16 in every format), checks the length, hands the bytes to the v2 or legacy decoder
and reports a trailing partial entry as truncated, as Fetch responses normally end with
one. A length that cannot be right (below the format's minimum) stops the walk, since the
next entry's position is then unknown. Does not decode batch contents itself.
"""

import struct

from .budget import DEFAULT_MAX_DECOMPRESSED_BYTES, DecompressionBudget
from .control import ControlDecoder
from .default_batch import MIN_BATCH_LENGTH, decode_default_batch
from .legacy import LOG_OVERHEAD, MIN_MESSAGE_SIZE, decode_legacy_message
from .shapes import new_batch

_OFFSET_LENGTH = struct.Struct(">qi")
_MAGIC_AT = 16
_MIN_LENGTH = {0: MIN_MESSAGE_SIZE[0], 1: MIN_MESSAGE_SIZE[1], 2: MIN_BATCH_LENGTH}


def decode_records(
    data: bytes | bytearray | memoryview,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    decode_control: ControlDecoder | None = None,
    budget: DecompressionBudget | None = None,
) -> list[dict]:
    """Decode a Kafka `records` field into one dict per batch, in wire order.

    Bad bytes never raise: they end up in a batch's `error`, `crc_valid` or `truncated`.
    ``budget``: decompressed bytes this field may still produce, shared with the other
    ``records`` fields of its frame (else ``max_decompressed_bytes`` for this field alone).
    """
    if budget is None:
        budget = DecompressionBudget(max_decompressed_bytes)
    if not isinstance(data, bytes):
        # Slices of bytes are bytes, which is what keys and values must be.
        data = bytes(data)
    n = len(data)
    batches = []
    pos = 0
    while pos < n:
        if n - pos <= _MAGIC_AT:
            batches.append(_stub(data, pos, n))
            break
        base_offset, length = _OFFSET_LENGTH.unpack_from(data, pos)
        magic = data[pos + _MAGIC_AT]
        declared_end = pos + LOG_OVERHEAD + length
        minimum = _MIN_LENGTH.get(magic)
        if minimum is None or length < minimum:
            problem = (
                f"unknown magic {magic}"
                if minimum is None
                else f"length {length} below the minimum {minimum} for magic {magic}"
            )
            batches.append(
                new_batch(
                    base_offset=base_offset, batch_length=length, magic=magic, error=problem, truncated=declared_end > n
                )
            )
            if minimum is None and length >= 0 and declared_end <= n:
                pos = declared_end
                continue
            break
        truncated = declared_end > n
        end = n if truncated else declared_end
        if magic == 2:
            batches.append(decode_default_batch(data, pos, end, truncated, budget, decode_control))
        else:
            batches.append(decode_legacy_message(data, pos, end, truncated, budget))
        if truncated:
            break
        pos = end
    return batches


def _stub(data: bytes, pos: int, n: int) -> dict:
    """A trailing piece too short to show its magic: keep the offset and length if whole."""
    fields = {}
    if n - pos >= 8:
        fields["base_offset"] = struct.unpack_from(">q", data, pos)[0]
    if n - pos >= LOG_OVERHEAD:
        fields["batch_length"] = struct.unpack_from(">i", data, pos + 8)[0]
    return new_batch(truncated=True, **fields)
