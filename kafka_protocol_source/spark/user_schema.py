"""A schema given with ``.schema(...)``, checked against the view's own when the read is planned.

A reader fills a column by its exact name and converts values to the column's type, so a name
the view does not have came back all null, and a type it does not give failed in pyarrow at run
time, naming no column. Here each column given must be one of the view's, with the view's type or
one its values widen to (``bigint`` for a ``smallint``, ``double`` for an integer, a timestamp
without time zone); structs may leave fields out, at any depth (a body's struct with only the
fields a query wants).
Only the column's type is compared: nullability and metadata are not.
"""

from __future__ import annotations

import difflib

from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from .options import OptionError

_SHOWN = 60  # characters of a long type shown in a message
_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)  # narrowest first
_FRACTIONAL = (FloatType, DoubleType)
_TIMESTAMPS = (TimestampType, TimestampNTZType)


def check_user_schema(given: StructType, own: StructType, view: str) -> None:
    """Raises ``OptionError`` for the first column of ``given`` that the view's ``own`` schema
    does not have, or has with another type."""
    columns = {f.name: f.dataType for f in own.fields}
    for field in given.fields:
        if field.name not in columns:
            raise OptionError(f"schema: the {view} view has no column {field.name!r}{_closest(field.name, columns)}")
        misfit = _misfit(field.dataType, columns[field.name], field.name)
        if misfit is not None:
            raise OptionError(f"schema: {misfit}")


def _misfit(given: DataType, own: DataType, path: str) -> str | None:
    if isinstance(given, StructType) and isinstance(own, StructType):
        fields = {f.name: f.dataType for f in own.fields}
        for field in given.fields:
            if field.name not in fields:
                return f"{path} has no field {field.name!r}{_closest(field.name, fields)}"
            misfit = _misfit(field.dataType, fields[field.name], f"{path}.{field.name}")
            if misfit is not None:
                return misfit
        return None
    if isinstance(given, ArrayType) and isinstance(own, ArrayType):
        return _misfit(given.elementType, own.elementType, f"{path}[]")
    if isinstance(given, MapType) and isinstance(own, MapType):
        return _misfit(given.keyType, own.keyType, f"{path} (keys)") or _misfit(
            given.valueType, own.valueType, f"{path} (values)"
        )
    if given.simpleString() == own.simpleString() or _widens(given, own):
        return None
    return f"{path} is {_shown(own)}, not {_shown(given)}"


def _widens(given: DataType, own: DataType) -> bool:
    """Whether the view's values convert to ``given`` without losing what they say: an integer
    to a wider one or to a floating type, a float to a float, a timestamp to one without a time
    zone (its values are UTC; a session whose timestampType is TIMESTAMP_NTZ writes it so)."""
    if isinstance(own, _INTEGRAL) and isinstance(given, _INTEGRAL):
        return _INTEGRAL.index(type(given)) >= _INTEGRAL.index(type(own))
    if isinstance(own, (*_INTEGRAL, *_FRACTIONAL)) and isinstance(given, _FRACTIONAL):
        return True
    return isinstance(own, _TIMESTAMPS) and isinstance(given, _TIMESTAMPS)


def _closest(name: str, names) -> str:
    same = [n for n in names if n.lower() == name.lower()]
    close = same or difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}? names are matched exactly)" if close else ""


def _shown(t: DataType) -> str:
    text = t.simpleString()
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
