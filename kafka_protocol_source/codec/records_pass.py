"""The pass after a body: its ``records`` fields, read as bytes by the parser, become batches.

The parsers leave ``records`` fields as ``RecordsBytes`` (the message codec knows no record
batches, as in kio); the decoder then hands them to the records stage here, with one
decompression budget for the whole frame and its own definitions for KRaft control data. Where
records fields can be is read once per message version from the resolved IR, so bodies without
any are never walked.
"""

from __future__ import annotations

from ..records import DecompressionBudget, decode_records
from ..spec.field_paths import FieldPaths, field_paths
from ..spec.ir import Field, Struct
from .embedded import decode_control_data
from .runtime import RecordsBytes

RecordsPaths = FieldPaths  # records fields, and the structs and arrays that hold them


_KNOWN: dict[int, tuple[Struct, RecordsPaths]] = {}  # id -> (the struct, kept alive; its tree)


def records_paths(struct: Struct) -> RecordsPaths:
    known = _KNOWN.get(id(struct))
    if known is None or known[0] is not struct:
        known = _KNOWN[id(struct)] = (struct, field_paths(struct, _is_records))
    return known[1]


def _is_records(field: Field) -> bool:
    return field.kind == "records"


def decode_records_fields(decoder, body: dict, paths: RecordsPaths, budget: DecompressionBudget) -> None:
    """Replace, in place, every ``records`` field of ``body`` on ``paths`` with its batches."""
    for name, below in paths.items():
        value = body.get(name)
        if value is None:
            continue
        if below is None:
            if isinstance(value, RecordsBytes):
                body[name] = decode_records(
                    value,
                    budget=budget,
                    decode_control=lambda type_id, data: decode_control_data(decoder, type_id, data),
                )
        elif isinstance(value, dict):
            decode_records_fields(decoder, value, below, budget)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    decode_records_fields(decoder, item, below, budget)
