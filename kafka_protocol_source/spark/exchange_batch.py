"""The exchanges view's Arrow batches, built up one exchange at a time.

A batch does not hold its exchanges. Each exchange, as it comes, leaves its scalar columns (one
tuple), the VARIANT bytes of its two bodies, its error codes and, with a corrupt-record column,
its raw bytes; then it is let go. Its decoded bodies are encoded while they are still in the CPU's
caches and freed at once, instead of a whole batch of decoded trees being held (and walked by the
garbage collector) until the batch is built.

Owns that accumulation only: which columns an exchange has comes from ``views/exchanges.py``, the
body encoders from ``views/variant_spec.py``, the Arrow arrays from ``arrow.py``.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import VariantType

from ..framing import Exchange
from ..views.exchanges import BODY_COLUMNS, SCALAR_COLUMNS, add_outcomes, corrupt_record, scalar_values
from ..views.outcomes import ResponseErrorCodes, exchange_error_codes
from ..views.variant_spec import BodyEncoders
from .arrow import BatchBuilder, VariantCells


class ExchangeBatch:
    """``add`` exchanges, then ``build`` the batch of their rows (which starts the next one)."""

    def __init__(
        self, builder: BatchBuilder, encoders: BodyEncoders, codes: ResponseErrorCodes, corrupt_column: str | None
    ):
        self.builder = builder
        self._encode = builder.variants.encode
        self._encoders = encoders
        self._codes = codes
        self._corrupt_column = corrupt_column
        self._start()

        fields = {f.name: f.dataType for f in builder.schema.fields}
        # typed views (option api) have struct body columns: those are given the bodies themselves
        self._as_variant = {name: isinstance(fields.get(name), VariantType) for name in BODY_COLUMNS}

    def _start(self) -> None:
        self._scalars: list[tuple] = []
        self._error_codes: list[list[int] | None] = []
        self._corrupt: list[bytes | None] = []
        self._requests = VariantCells()
        self._responses = VariantCells()
        self._bodies: dict[str, list[dict | None]] = {name: [] for name in BODY_COLUMNS}

    def __len__(self) -> int:
        return len(self._scalars)

    def add(self, ex: Exchange) -> None:
        self._scalars.append(scalar_values(ex))
        self._error_codes.append(exchange_error_codes(ex, self._codes))
        if self._corrupt_column:
            self._corrupt.append(corrupt_record(ex))
        body = ex.request
        if not self._as_variant["request"]:
            self._bodies["request"].append(body)
        elif body is None:
            self._requests.null()
        else:
            self._requests.add(*self._encode(body, self._encoders.request(ex.api_key, ex.api_version)))
        body = ex.response
        if not self._as_variant["response"]:
            self._bodies["response"].append(body)
        elif body is None:
            self._responses.null()
        else:
            self._responses.add(*self._encode(body, self._encoders.response(ex.api_key, ex.api_version)))

    def build(self) -> pa.RecordBatch:
        n = len(self._scalars)
        by_column = map(list, zip(*self._scalars, strict=True)) if n else ([] for _ in SCALAR_COLUMNS)
        columns = dict(zip(SCALAR_COLUMNS, by_column, strict=True))
        add_outcomes(columns, self._error_codes)
        if self._corrupt_column:
            columns[self._corrupt_column] = self._corrupt
        columns.update((name, bodies) for name, bodies in self._bodies.items() if not self._as_variant[name])
        batch = self.builder.build_columns(columns, n, encoded={"request": self._requests, "response": self._responses})
        self._start()
        return batch
