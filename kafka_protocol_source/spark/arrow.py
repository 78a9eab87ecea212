"""Rows to pyarrow RecordBatches that match the Spark schema exactly.

A batch is given as rows (dicts keyed by column) or as its columns (a list of values each).
Columns are built straight from the decoded values with ``pa.array(values, type=...)`` (no
tuples, no per-row Spark conversion): typed bodies are dicts that pyarrow maps onto the struct
type by field name (keys the schema lacks are ignored, fields a dict lacks are null). VARIANT
columns are encoded by ``variant.py``, with the encoder the process shares: a Python worker runs
task after task, and each would otherwise learn and compile again the shapes the last one had.
A column whose rows say what their value should be (the exchanges view's bodies, by api key and
version) is encoded with the encoders the builder is handed for it, compiled from the spec.
The Arrow schema is Spark's own mapping of the Spark schema, which the Python data source checks
each batch against.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, StringType, StructType, VariantType

from ..views.variant import BodySpec, VariantEncoder, process_encoder


class BatchBuilder:
    """Builds RecordBatches of one Spark schema from rows given as dicts keyed by column."""

    def __init__(
        self,
        schema: StructType,
        variants: VariantEncoder | None = None,
        bodies: Mapping[str, Callable[[Mapping[str, list], int], Sequence[BodySpec | None]]] | None = None,
    ):
        """``bodies``: per VARIANT column, given a batch's columns and its row count, what the
        value of each row should be (an encoder compiled for it: ``views/variant_spec.py``, or
        None), where that is known."""
        self.schema = schema
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.variants = variants or process_encoder()
        self.bodies = bodies or {}
        self._needs: dict[int, bool] = {}  # id of a Spark type -> whether its values need fixing

    def build(self, rows: list[dict]) -> pa.RecordBatch:
        """A batch of rows given as dicts keyed by column."""
        return self.build_columns({f.name: [row.get(f.name) for row in rows] for f in self.schema.fields}, len(rows))

    def build_columns(
        self, columns: Mapping[str, list], n: int, encoded: Mapping[str, VariantCells] | None = None
    ) -> pa.RecordBatch:
        """A batch of ``n`` rows given as a list of values per column (a column not given is null);
        ``encoded``: VARIANT columns whose values are encoded already."""
        arrays = []
        for field, arrow_field in zip(self.schema.fields, self.arrow_schema, strict=True):
            dtype = field.dataType
            if isinstance(dtype, VariantType):
                cells = encoded.get(field.name) if encoded is not None else None
                if cells is None:
                    cells = self._variant_cells(columns, field.name, n)
                arrays.append(cells.array(arrow_field.type))
                continue
            values = columns.get(field.name)
            if values is None:
                values = [None] * n
            elif self._needs_fixing(dtype):
                values = [self._fix(v, dtype) for v in values]
            arrays.append(pa.array(values, type=arrow_field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def _variant_cells(self, columns: Mapping[str, list], name: str, n: int) -> VariantCells:
        values = columns.get(name)
        cells = VariantCells()
        if values is None:
            cells.nulls(n)
            return cells
        spec_of = self.bodies.get(name)
        specs = spec_of(columns, n) if spec_of is not None else [None] * n
        encode = self.variants.encode
        for v, spec in zip(values, specs, strict=True):
            if v is None:
                cells.null()
            else:
                cells.add(*encode(v, spec))
        return cells

    # -- values the Arrow types cannot take as they are -------------------------------

    def _needs_fixing(self, dtype) -> bool:
        key = id(dtype)
        needs = self._needs.get(key)
        if needs is None:
            needs = self._needs[key] = bool(self._fix_fields(dtype)) or (
                isinstance(dtype, ArrayType) and self._needs_fixing(dtype.elementType)
            )
        return needs

    def _fix_fields(self, dtype) -> list:
        if not isinstance(dtype, StructType):
            return []
        return [f for f in dtype.fields if f.metadata.get("kafka_wire") == "json" or self._needs_fixing(f.dataType)]

    def _fix(self, value, dtype):
        if value is None:
            return None
        if isinstance(dtype, ArrayType):
            return [self._fix(v, dtype.elementType) for v in value]
        if isinstance(dtype, StringType):
            return value if isinstance(value, str) else json.dumps(value, default=_json_default, sort_keys=True)
        if isinstance(dtype, StructType) and isinstance(value, dict):
            fixed = None
            for f in self._fix_fields(dtype):
                v = value.get(f.name)
                if v is not None:
                    nv = self._fix(v, f.dataType)
                    if nv is not v:
                        fixed = fixed or dict(value)
                        fixed[f.name] = nv
            return fixed or value
        return value


class VariantCells:
    """A VARIANT column's cells, added one at a time as they are encoded (or null)."""

    __slots__ = ("mask", "metadata", "values")

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.metadata: list[bytes] = []
        self.mask: list[bool] = []

    def add(self, value: bytes, metadata: bytes) -> None:
        self.values.append(value)
        self.metadata.append(metadata)
        self.mask.append(False)

    def null(self) -> None:
        self.values.append(b"")
        self.metadata.append(_EMPTY_METADATA)
        self.mask.append(True)

    def nulls(self, n: int) -> None:
        self.values += [b""] * n
        self.metadata += [_EMPTY_METADATA] * n
        self.mask += [True] * n

    def array(self, arrow_type: pa.StructType) -> pa.StructArray:
        children = [pa.array(self.values, type=pa.binary()), pa.array(self.metadata, type=pa.binary())]
        return pa.StructArray.from_arrays(children, fields=list(arrow_type), mask=pa.array(self.mask, type=pa.bool_()))


_EMPTY_METADATA = b"\x01\x00\x00"  # an empty dictionary: a null cell's children are not nullable


def _json_default(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    return str(value)
