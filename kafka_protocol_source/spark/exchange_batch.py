"""The exchanges view's Arrow batches, built up one exchange at a time.

A batch does not hold its exchanges. Each exchange, as it comes, leaves its scalar columns (one
tuple), the VARIANT bytes of its two bodies, its error codes, with a corrupt-record column its
raw bytes, and with a ``topic_names`` column its topic ids' names; then it is let go. Its
decoded bodies are encoded while they are still in the CPU's caches and freed at once, instead
of a whole batch of decoded trees being held (and walked by the garbage collector) until the
batch is built.

Owns that accumulation only: which columns an exchange has comes from ``views/exchanges.py``, the
body encoders from ``views/variant_spec.py``, the Arrow arrays from ``arrow.py``.
"""

from __future__ import annotations

from operator import attrgetter

import pyarrow as pa
from pyspark.sql.types import VariantType

from ..framing import Exchange
from ..views.exchanges import (
    BODY_COLUMNS,
    SCALAR_COLUMNS,
    add_outcomes,
    corrupt_record,
    number_packets,
    scalar_values,
)
from ..views.outcomes import ResponseErrorCodes, exchange_error_codes
from ..views.topic_names import TOPIC_NAMES, IdNaming
from ..views.variant_spec import BodyEncoders
from .arrow import BatchBuilder, VariantCells


class ExchangeBatch:
    """``add`` exchanges, then ``build`` the batch of their rows (which starts the next one)."""

    def __init__(
        self,
        builder: BatchBuilder,
        encoders: BodyEncoders,
        codes: ResponseErrorCodes,
        corrupt_column: str | None,
        naming: IdNaming | None = None,
    ):
        """``naming``: the view's ``topic_names`` (None: the schema has no such column)."""
        self.builder = builder
        self._naming = naming
        self._encode = builder.variants.encode
        self._codes = codes
        self._corrupt_column = corrupt_column
        fields = {f.name: f.dataType for f in builder.schema.fields}
        # Per body column: how to get the body, and the encoder of its message version, or None
        # where the column is not a VARIANT (typed views, option api: the bodies themselves).
        spec_of = {"request": encoders.request, "response": encoders.response}
        self._body_columns = [
            (name, attrgetter(name), spec_of[name] if isinstance(fields.get(name), VariantType) else None)
            for name in BODY_COLUMNS
        ]
        self._start()

    def _start(self) -> None:
        self._scalars: list[tuple] = []
        self._error_codes: list[list[int] | None] = []
        self._corrupt: list[bytes | None] = []
        self._topic_names: list[list[tuple[str, str | None]] | None] = []
        self._cells = {name: VariantCells() for name in BODY_COLUMNS}
        self._bodies: dict[str, list[dict | None]] = {name: [] for name in BODY_COLUMNS}

    def __len__(self) -> int:
        return len(self._scalars)

    def add(self, ex: Exchange) -> None:
        self._scalars.append(scalar_values(ex))
        self._error_codes.append(exchange_error_codes(ex, self._codes))
        if self._corrupt_column:
            self._corrupt.append(corrupt_record(ex))
        if self._naming is not None:
            self._topic_names.append(self._naming.of(ex))
        for name, body_of, spec_of in self._body_columns:
            body = body_of(ex)
            if spec_of is None:
                self._bodies[name].append(body)
            elif body is None:
                self._cells[name].null()
            else:
                self._cells[name].add(*self._encode(body, spec_of(ex.api_key, ex.api_version)))

    def build(self) -> pa.RecordBatch:
        n = len(self._scalars)
        by_column = map(list, zip(*self._scalars, strict=True)) if n else ([] for _ in SCALAR_COLUMNS)
        columns = dict(zip(SCALAR_COLUMNS, by_column, strict=True))
        number_packets(columns)
        add_outcomes(columns, self._error_codes)
        if self._corrupt_column:
            columns[self._corrupt_column] = self._corrupt
        if self._naming is not None:
            columns[TOPIC_NAMES] = self._topic_names
        columns.update((name, self._bodies[name]) for name, _, spec_of in self._body_columns if spec_of is None)
        batch = self.builder.build_columns(columns, n, encoded=self._cells)
        self._start()
        return batch
