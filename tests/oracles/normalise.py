"""Turn an oracle's message value into the shape our decoder promises, and compare the two.

Owns: the snake_case rule for spec field names, spec JSON loading (for the original field names
and struct definitions), normalisers for kio dataclasses and kafka-python data containers, the
record-set projection used to compare ``records`` fields, and a structural diff that names the
path of every disagreement.

Does not own: value generation (``strategies.py``) or any knowledge of our decoder's internals:
only its documented output contract (field names are spec names in snake_case, arrays are lists,
structs dicts, uuids canonical strings, absent-at-version fields are absent, tagged fields take
their spec default, ``records`` fields decode to a list of batch dicts or None).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
import re
import struct
import uuid
from pathlib import Path
from typing import Any

from .records import ExpectedRecords, expected_records

ZERO_UUID = "00000000-0000-0000-0000-000000000000"

_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """Spec field name → our dict key (``ProducerIdBlocks`` → ``producer_id_blocks``)."""
    return _SNAKE.sub("_", name).lower()


# --------------------------------------------------------------------------- spec JSON

_COMMENT = re.compile(r"(?m)^\s*//.*$")


def parse_spec_text(text: str) -> dict:
    return json.loads(_COMMENT.sub("", text))


@functools.cache
def load_spec(spec_dir: str, message_name: str) -> dict:
    """One message definition (``MetadataRequest``) from a directory of Kafka JSON specs."""
    return parse_spec_text((Path(spec_dir) / f"{message_name}.json").read_text())


def parse_versions(text: str | None) -> tuple[int, int] | None:
    if text is None or text.strip() in ("", "none"):
        return None
    text = text.strip()
    if text.endswith("+"):
        return int(text[:-1]), 2**15 - 1
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def in_versions(version: int, text: str | None) -> bool:
    rng = parse_versions(text)
    return rng is not None and rng[0] <= version <= rng[1]


def struct_fields(field_spec: dict, common: dict[str, list]) -> list[dict]:
    """The sub-fields of a struct or struct-array field, resolving commonStructs."""
    if "fields" in field_spec:
        return field_spec["fields"]
    type_name = field_spec["type"].removeprefix("[]")
    return common[type_name]


def common_structs(spec: dict) -> dict[str, list]:
    return {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}


def is_struct_type(type_str: str) -> bool:
    inner = type_str.removeprefix("[]")
    return inner[:1].isupper()


# --------------------------------------------------------------------------- kio


def _spec_field_for(kio_name: str, spec_fields: list[dict]) -> dict:
    # kio has its own snake_case rule; match on the name with underscores and case removed,
    # which is unique within every struct of the specs.
    flat = kio_name.replace("_", "").lower()
    hits = [f for f in spec_fields if f["name"].lower() == flat]
    if not hits:
        # kio drops the "Ms" suffix of fields it types as timedelta/datetime
        # (ThrottleTimeMs → throttle_time, IssueTimestampMs → issue_timestamp).
        hits = [f for f in spec_fields if f["name"].lower() == flat + "ms"]
    if len(hits) != 1:
        raise LookupError(f"kio field {kio_name!r} matches {len(hits)} spec fields")
    return hits[0]


def kio_to_ours(entity: Any, spec_fields: list[dict], common: dict[str, list]) -> dict:
    """A kio message dataclass → the dict our decoder should produce for the same bytes."""
    out: dict[str, Any] = {}
    for fld in dataclasses.fields(entity):
        spec = _spec_field_for(fld.name, spec_fields)
        value = getattr(entity, fld.name)
        out[snake(spec["name"])] = _kio_value(value, fld.metadata.get("kafka_type"), spec, common)
    return out


def _kio_value(value: Any, kafka_type: str | None, spec: dict, common: dict) -> Any:
    if is_struct_type(spec["type"]):
        if value is None:
            return None
        sub = struct_fields(spec, common)
        if isinstance(value, tuple):
            return [kio_to_ours(v, sub, common) for v in value]
        return kio_to_ours(value, sub, common)
    if isinstance(value, tuple):
        return [_kio_scalar(v, kafka_type) for v in value]
    return _kio_scalar(value, kafka_type)


def _kio_scalar(value: Any, kafka_type: str | None) -> Any:
    if kafka_type == "records":
        return expected_records(value)
    if kafka_type == "uuid":
        # kio writes None as the all-zero uuid (the wire has no null uuid).
        return ZERO_UUID if value is None else str(value)
    if kafka_type == "datetime_i64":
        # kio writes a null timestamp as -1.
        return -1 if value is None else round(value.timestamp() * 1000)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return round(value.total_seconds() * 1000)
    return plain(value)


def plain(value: Any) -> Any:
    """Strip subclass wrappers (kio's i32, TopicName, ErrorCode; kafka-python's ints)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.timedelta)):
        raise TypeError(f"time value {value!r} needs its kafka_type to normalise")
    raise TypeError(f"cannot normalise {type(value).__name__}: {value!r}")


# --------------------------------------------------------------------------- kafka-python


def kafka_python_to_ours(item: Any, kp_struct: Any, raw_fields: list[dict], version: int, common: dict) -> dict:
    """A kafka-python DataContainer → the dict our decoder should produce.

    ``kp_struct`` is kafka-python's StructField (possibly json-patched: it renames
    authorized-operations fields and retypes them as ``bitfield``); ``raw_fields`` are the same
    fields from the unpatched JSON, zipped by position, for the spec names.
    """
    out: dict[str, Any] = {}
    kp_fields = list(kp_struct._fields)
    assert len(kp_fields) == len(raw_fields), (kp_struct.name, len(kp_fields), len(raw_fields))
    for kp_field, raw in zip(kp_fields, raw_fields, strict=True):
        if not kp_field.for_version_q(version):
            continue
        value = getattr(item, kp_field.name)
        out[snake(raw["name"])] = _kp_value(value, kp_field, raw, version, common)
    return out


def _kp_value(value: Any, kp_field: Any, raw: dict, version: int, common: dict) -> Any:
    if value is None and kp_field._type_str not in ("uuid", "bitfield"):
        return None
    if kp_field.is_struct():
        return kafka_python_to_ours(value, kp_field, struct_fields(raw, common), version, common)
    if kp_field.is_struct_array():
        sub = struct_fields(raw, common)
        return [kafka_python_to_ours(v, kp_field, sub, version, common) for v in value]
    if kp_field.is_array():
        return [_kp_scalar(v, kp_field.array_of._type_str) for v in value]
    return _kp_scalar(value, kp_field._type_str)


def _kp_scalar(value: Any, type_str: str) -> Any:
    if type_str == "records":
        return expected_records(value)
    if type_str == "uuid":
        return ZERO_UUID if value is None else str(value)
    if type_str == "bitfield":
        from kafka.protocol.schemas.fields.codecs import BitField

        return struct.unpack(">i", BitField.encode(value))[0]
    return plain(value)


# --------------------------------------------------------------------------- comparison


def diff(expected: Any, actual: Any, path: str = "body") -> list[str]:
    """Every disagreement between an expected value and our decoder's output, by path."""
    if isinstance(expected, ExpectedRecords):
        return _diff_records(expected, actual, path)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected dict, got {type(actual).__name__} {actual!r:.200}"]
        problems = []
        for key in sorted(expected.keys() - actual.keys()):
            problems.append(f"{path}.{key}: missing (expected {expected[key]!r:.200})")
        for key in sorted(actual.keys() - expected.keys()):
            if _embedded_extra(key, expected):
                continue
            problems.append(f"{path}.{key}: unexpected key (value {actual[key]!r:.200})")
        for key in expected.keys() & actual.keys():
            problems += diff(expected[key], actual[key], f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected list, got {type(actual).__name__} {actual!r:.200}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, got {len(actual)}: {expected!r:.300} vs {actual!r:.300}"]
        problems = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            problems += diff(e, a, f"{path}[{i}]")
        return problems
    if expected is None:
        return [] if actual is None else [f"{path}: expected None, got {actual!r:.200}"]
    # Scalars: same kind and equal value (bool is not an int here, bytes is not str).
    kind = bool if isinstance(expected, bool) else type(expected)
    if kind is bool:
        ok = isinstance(actual, bool) and actual == expected
    elif kind is int:
        ok = isinstance(actual, int) and not isinstance(actual, bool) and actual == expected
    else:
        ok = isinstance(actual, kind) and actual == expected
    return [] if ok else [f"{path}: expected {expected!r:.200}, got {actual!r:.200}"]


def _embedded_extra(key: str, expected: dict) -> bool:
    """Our decoder's documented embedded decoding (codec/embedded.py): a bytes field that holds
    another Kafka structure (consumer protocol metadata/assignments, Envelope request data) gets
    ``<field>_decoded`` or ``<field>_error`` beside the raw bytes, which stay as they are."""
    for suffix in ("_decoded", "_error"):
        base = key.removesuffix(suffix)
        if base != key and isinstance(expected.get(base), bytes):
            return True
    return False


def _diff_records(expected: ExpectedRecords, actual: Any, path: str) -> list[str]:
    if not isinstance(actual, list):
        return [f"{path}: expected a list of record batches, got {type(actual).__name__} {actual!r:.200}"]
    return diff(
        expected.batches,
        [_project(e, a) for e, a in zip(expected.batches, actual, strict=True)] + actual[len(expected.batches) :],
        path,
    )


def _project(expected: Any, actual: Any) -> Any:
    """Keep only the keys of ``actual`` that ``expected`` names (batch and record dicts)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: _project(expected[k], actual[k]) if k in expected else actual[k] for k in actual if k in expected}
    if isinstance(expected, list) and isinstance(actual, list):
        return [_project(e, a) for e, a in zip(expected, actual, strict=True)] + actual[len(expected) :]
    return actual
