"""How many decompressed bytes one frame may still produce, shared by all its ``records`` fields.

A Produce request whose partitions each carry a batch that compresses very well would expand
without bound if each field had a limit of its own; one budget per frame bounds a frame, and
so a task. Every decompression is asked to stop at what is left (the codecs stop before they
pass it, see ``compression``); once the budget is spent, later batches are not decompressed at
all and say why.
"""

from __future__ import annotations

from .compression import decompress
from .errors import RecordsError

DEFAULT_MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024  # per frame: the maxDecompressedBytes option
# Records one frame may decode: a record dict costs far more memory than its bytes (64 MiB of
# 7-byte records would be nine million dicts), so the budget also allows one record per this many
# bytes of it, and never fewer than MIN_RECORDS.
RECORD_COST = 1024
MIN_RECORDS = 1 << 16


class DecompressionBudget:
    def __init__(self, total: int = DEFAULT_MAX_DECOMPRESSED_BYTES):
        self.total = total
        self.left = total
        self.records_total = max(total // RECORD_COST, MIN_RECORDS)
        self.records_left = self.records_total
        self.exhausted = False
        self.records_cut = False  # spent by the count of records rather than by bytes

    def decompress(self, codec_id: int, data: bytes) -> bytes:
        if self.exhausted:
            raise RecordsError(
                f"not decompressed: the frame's decompression budget of {self.total} bytes "
                f"(maxDecompressedBytes) is spent"
            )
        try:
            out = decompress(codec_id, data, self.left)
        except RecordsError as e:
            if "exceed" not in str(e):
                raise
            self.exhausted = True
            raise RecordsError(
                f"decompression stopped at the frame's budget of {self.total} bytes (maxDecompressedBytes): {e}"
            ) from e
        self.left -= len(out)
        return out

    def records_allowed(self) -> int:
        """How many more records may be decoded before the budget is spent."""
        return max(0, self.records_left)

    def charge_records(self, count: int) -> None:
        self.records_left -= count

    def records_spent(self) -> str:
        self.exhausted = self.records_cut = True
        return self.note()

    def note(self) -> str:
        """What a spent budget left out, and the option that lets more through."""
        if self.records_cut:
            return (
                f"records past the frame's first {self.records_total} not decoded: "
                f"the record budget of maxDecompressedBytes ({self.total} bytes, one record per {RECORD_COST}); "
                "raise it to decode more"
            )
        return f"records not decompressed past the frame's budget of {self.total} bytes (maxDecompressedBytes)"
