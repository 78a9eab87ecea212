"""Encode decoded Python values (dicts, lists, str, int, float, bool, None, bytes) as Spark VARIANT.

Spark's variant binary format (common/variant/README.md in the Spark repository): a value
buffer and a metadata buffer holding the dictionary of object keys. Values are encoded bottom
up, each child to its own bytes, so no header ever has to be shifted into place afterwards.
Bytes become variant BINARY; integers pick the smallest of int8/16/32/64; other numbers double.

This runs once per exchange body on the Spark path (a body is a few dozen values), so it is
written for CPython around one fact: bodies of one message repeat the same shapes. A
``VariantEncoder`` keeps one key dictionary per family of bodies (the top-level keys of a body,
which name its message and version), so field ids, each object's sorted key order and header
are worked out once per object shape, and the metadata bytes once per family. Each object is
then encoded by a function compiled for its shape: straight-line code that encodes each value
by the expression for the type the field had when the shape was first seen, behind a check of
that type. A value of another type, arrays, and objects with keys that are not all strings take
the generic walk, which encodes a value the same way wherever it is. ``process_encoder`` is the
one encoder a process shares, so that a Spark worker's tasks do not each learn the shapes again.
Where the caller knows what a body should be, ``encode`` takes an encoder compiled from the spec
(``variant_spec.py``), which needs no shape learned and falls back on the walk here.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache
from itertools import accumulate
from operator import itemgetter
from typing import Protocol

_NULL, _TRUE, _FALSE = b"\x00", bytes([1 << 2]), bytes([2 << 2])
_INT8, _INT16, _INT32, _INT64, _DOUBLE = 3 << 2, 4 << 2, 5 << 2, 6 << 2, 7 << 2
_BINARY, _LONG_STRING = 15 << 2, 16 << 2
_EMPTY_ARRAY = bytes((3, 0, 0))  # small header, count 0, the one offset 0
_F64 = struct.Struct("<d")
_I16, _I32, _I64 = struct.Struct("<Bh"), struct.Struct("<Bi"), struct.Struct("<Bq")
_BIN_HEAD, _LONG_STRING_HEAD = struct.Struct("<BI"), struct.Struct("<BI")
_MAX_SHORT_STRING = 63
_SMALL_INTS = {i: bytes((_INT8, i & 0xFF)) for i in range(-0x80, 0x80)}  # int8: the most common value
_SHORT_STRING_HEADS = [bytes((n << 2 | 1,)) for n in range(_MAX_SHORT_STRING + 1)]
_SMALL = 0x100  # below it, counts, field ids and offsets take one byte each
_MAX_COMPILED_FIELDS = 200  # objects with more fields are walked (one compiled function per shape)
# A family with more keys (keys made of data, say) is dropped, and the next body starts a new one:
# metadata stays about the size of one message's keys.
_MAX_FAMILY_KEYS = 2048


def _size_of(n: int) -> int:
    return 1 if n < 0x100 else 2 if n < 0x10000 else 3 if n < 0x1000000 else 4


def _int(v: int) -> bytes:
    small = _SMALL_INTS.get(v)
    if small is not None:
        return small
    if -0x8000 <= v < 0x8000:
        return _I16.pack(_INT16, v)
    if -0x80000000 <= v < 0x80000000:
        return _I32.pack(_INT32, v)
    if -(1 << 63) <= v < (1 << 63):
        return _I64.pack(_INT64, v)
    return _str(str(v))


def _str(v: str) -> bytes:
    if len(v) <= _MAX_SHORT_STRING and v.isascii():
        return _SHORT_STRING_HEADS[len(v)] + v.encode("ascii")
    raw = v.encode("utf-8", "surrogatepass")
    n = len(raw)
    if n <= _MAX_SHORT_STRING:
        return _SHORT_STRING_HEADS[n] + raw
    return _LONG_STRING_HEAD.pack(_LONG_STRING, n) + raw


def _binary(v) -> bytes:
    return _BIN_HEAD.pack(_BINARY, len(v)) + bytes(v)


def _float(v: float) -> bytes:
    return bytes((_DOUBLE,)) + _F64.pack(v)


class _Keys(dict):
    """A family's key dictionary (key -> field id, in the order first seen), with what is known
    of its object shapes and its metadata bytes as of the last time they were built."""

    __slots__ = ("metadata", "metadata_keys", "shapes")

    def __init__(self):
        super().__init__()
        self.shapes: dict[tuple, _Shape | _AnyKeys] = {}
        self.metadata, self.metadata_keys = b"", -1


class _Shape:
    """One object shape (its keys in their dict order) in one family: the field ids, the header
    when ids and count take a byte each, and ``encode``, compiled for this shape on first use."""

    __slots__ = ("encode", "head", "ids", "names")

    def __init__(self, obj: dict, keys: _Keys):
        names = sorted(obj)
        for k in names:
            if k not in keys:
                keys[k] = len(keys)
        self.names = names
        self.ids = [keys[k] for k in names]
        small = len(names) < _SMALL and max(self.ids, default=0) < _SMALL
        self.head = _object_head(self.ids, 1) if small else None
        self.encode: Callable[[dict, _Keys], bytes] = _compile(self, [type(obj[k]) for k in names])


class _AnyKeys:
    """Objects whose keys are not all strings, or too many: encoded by the generic walk."""

    __slots__ = ()

    @staticmethod
    def encode(obj: dict, keys: _Keys) -> bytes:
        return _object_of_any_keys(obj, keys)


def _value(v, keys: _Keys) -> bytes:
    t = type(v)
    if t is dict:
        return _object(v, keys)
    if t is int:
        return _int(v)
    if t is list or t is tuple:
        return _array(v, keys)
    if t is str:
        return _str(v)
    if v is None:
        return _NULL
    if t is bool:
        return _TRUE if v else _FALSE
    if t is bytes or t is bytearray or t is memoryview:
        return _binary(v)
    if t is float:
        return _float(v)
    if isinstance(v, dict):
        return _object_of_any_keys(v, keys)
    return _str(str(v))


def _array(items, keys: _Keys) -> bytes:
    if not items:
        return _EMPTY_ARRAY
    parts = []
    offsets = [0]
    total = 0
    for v in items:
        t = type(v)
        if t is int:
            p = _SMALL_INTS.get(v) or _int(v)
        elif t is dict:
            p = _object(v, keys)
        elif v is None:
            p = _NULL
        else:
            p = _value(v, keys)
        parts.append(p)
        total += len(p)
        offsets.append(total)
    n = len(parts)
    if n < _SMALL and total < _SMALL:
        return bytes((3, n, *offsets)) + b"".join(parts)  # header: offsets 1 byte, count 1 byte
    return _container(parts, offsets, 3, None)


def _object(obj: dict, keys: _Keys) -> bytes:
    shape_key = tuple(obj)
    shape = keys.shapes.get(shape_key)
    if shape is None:
        shape = keys.shapes[shape_key] = _learn(obj, keys)
    return shape.encode(obj, keys)


def _learn(obj: dict, keys: _Keys) -> _Shape | _AnyKeys:
    """The shape of objects with the keys of ``obj``, its encoder compiled for the types of the
    values ``obj`` has (keys that are not all strings, or too many of them, are walked)."""
    if len(obj) > _MAX_COMPILED_FIELDS or any(type(k) is not str for k in obj):
        return _AnyKeys()
    return _Shape(obj, keys)


def _compile(shape: _Shape, types: list[type]):
    """Straight-line code that encodes an object of ``shape``: each value by the expression for
    the type this field had when the shape was first seen, behind a check of that type (a value
    of another type takes the generic ``_value``, which encodes it the same way)."""
    n = len(types)
    lines = ["def encode(obj, keys):"]
    if n > 1:
        lines.append(f"    ({''.join(f'v{i}, ' for i in range(n))}) = values(obj)")
    elif n == 1:
        lines.append("    v0 = obj[name]")
    for i, t in enumerate(types):
        lines.append(f"    p{i} = {_ENCODE_AS.get(t, 'value(v{i}, keys)').format(i=i)}")
    lines.append("    o0 = 0")
    for i in range(n):
        lines.append(f"    o{i + 1} = o{i} + len(p{i})")
    parts = "".join(f"p{i}, " for i in range(n))
    offsets = "".join(f"o{i}, " for i in range(n + 1))
    if shape.head is not None:
        lines.append(f"    if o{n} < {_SMALL}:")
        lines.append(f"        return b''.join((head, bytes(({offsets})), {parts}))")
        lines.append(f"    if o{n} < 0x10000:")  # 2-byte offsets: objects that hold records, say
        lines.append(f"        return b''.join((head2, offsets2({offsets}), {parts}))")
    lines.append(f"    return container(({parts}), [{offsets}], 2, ids)")
    scope = {
        **_TEMPLATE_NAMES,
        "values": _getter(*shape.names) if n > 1 else None,
        "name": shape.names[0] if n else None,
        "head": shape.head,
        "head2": _object_head(shape.ids, 2) if shape.head is not None else None,
        "offsets2": struct.Struct(f"<{n + 1}H").pack,
        "ids": shape.ids,
    }
    exec("\n".join(lines), scope)  # noqa: S102 - source built here from fixed templates only
    return scope["encode"]


def _object_head(ids: list[int], offset_size: int) -> bytes:
    """An object's header byte, field count and field ids, for offsets of ``offset_size`` bytes
    (fewer than 256 fields)."""
    id_size = _size_of(max(ids, default=0))
    head = ((id_size - 1) << 2 | (offset_size - 1)) << 2 | 2
    return bytes((head, len(ids))) + _pack(ids, id_size)


_getter: Callable[..., Callable] = itemgetter  # typed here: mypy 2.4 cannot infer itemgetter(*names)

_ENCODE_AS = {  # per type a field had when its shape was first seen, how value number {i} is encoded
    int: "(small_ints(v{i}) or int_(v{i})) if type(v{i}) is int else value(v{i}, keys)",
    str: "heads[len(v{i})] + v{i}.encode('ascii')"
    f" if type(v{{i}}) is str and len(v{{i}}) <= {_MAX_SHORT_STRING} and v{{i}}.isascii() else value(v{{i}}, keys)",
    dict: "obj_(v{i}, keys) if type(v{i}) is dict else value(v{i}, keys)",
    list: "array(v{i}, keys) if type(v{i}) is list else value(v{i}, keys)",
    type(None): "null if v{i} is None else value(v{i}, keys)",
    bool: "(true if v{i} else false) if type(v{i}) is bool else value(v{i}, keys)",
    bytes: f"bin_head({_BINARY}, len(v{{i}})) + v{{i}} if type(v{{i}}) is bytes else value(v{{i}}, keys)",
}


def _object_of_any_keys(obj: dict, keys: _Keys) -> bytes:
    entries = []
    for key, value in obj.items():
        key = str(key)
        kid = keys.get(key)
        if kid is None:
            kid = keys[key] = len(keys)
        entries.append((key, kid, _value(value, keys)))
    entries.sort(key=lambda e: e[0])
    parts = [e[2] for e in entries]
    return _container(parts, list(accumulate(map(len, parts), initial=0)), 2, [e[1] for e in entries])


def _container(parts, offsets: list[int], basic_type: int, ids: list[int] | None) -> bytes:
    """``offsets``: one per element, then the end (parts may each hold several elements' bytes)."""
    n = len(offsets) - 1
    large = n > 0xFF
    offset_size = _size_of(offsets[-1])
    if ids is None:
        head = ((large << 2 | (offset_size - 1)) << 2) | basic_type
        id_bytes = b""
    else:
        id_size = _size_of(max(ids, default=0))
        head = ((large << 4 | (id_size - 1) << 2 | (offset_size - 1)) << 2) | basic_type
        id_bytes = _pack(ids, id_size)
    count = n.to_bytes(4 if large else 1, "little")
    return b"".join((bytes((head,)), count, id_bytes, _pack(offsets, offset_size), *parts))


def _metadata(keys: _Keys) -> bytes:
    names = [k.encode("utf-8", "surrogatepass") for k in keys]
    total = sum(map(len, names))
    offsets = list(accumulate(map(len, names), initial=0))
    if total < _SMALL and len(names) < _SMALL:
        return bytes((1, len(names), *offsets)) + b"".join(names)  # version 1, keys not sorted, 1-byte offsets
    offset_size = _size_of(max(total, len(names)))
    header = bytes((1 | (offset_size - 1) << 6,))
    return b"".join((header, _pack([len(names)], offset_size), _pack(offsets, offset_size), *names))


def _pack(values: list[int], size: int) -> bytes:
    """Little-endian unsigned integers of ``size`` bytes each."""
    if size == 1:
        return bytes(values)
    if size == 2:
        return struct.pack(f"<{len(values)}H", *values)
    if size == 4:
        return struct.pack(f"<{len(values)}I", *values)
    return b"".join(v.to_bytes(3, "little") for v in values)


# The names the templates of _ENCODE_AS use, in the scope of every compiled encoder.
_TEMPLATE_NAMES = {
    "container": _container,
    "value": _value,
    "obj_": _object,
    "array": _array,
    "int_": _int,
    "str_": _str,
    "small_ints": _SMALL_INTS.get,
    "heads": _SHORT_STRING_HEADS,
    "bin_head": _BIN_HEAD.pack,
    "true": _TRUE,
    "false": _FALSE,
    "null": _NULL,
}


class VariantEncoder:
    """Encodes one value at a time; ``encode`` returns (value, metadata) as Spark expects them.

    Keeps a key dictionary per family of top-level keys: a value's metadata holds the keys of its
    family seen so far, which for the bodies of one message version is about the keys of that
    version's schema. Memory is bounded by the shapes learned (each holds a compiled function):
    past ``max_shapes`` of them in all, every family is forgotten and learned again."""

    __slots__ = ("families", "max_shapes", "shapes_learned")

    def __init__(self, max_shapes: int = 4096):
        self.families: dict[tuple, _Keys] = {}
        self.max_shapes = max_shapes
        self.shapes_learned = 0

    def encode(self, value, body: BodySpec | None = None) -> tuple[bytes, bytes]:
        """``body``: an encoder compiled for what ``value`` should be (``variant_spec.py``), if known."""
        if body is not None and type(value) is dict:
            return self._encode_as(value, body)
        family = tuple(value) if type(value) is dict else None
        keys = self.families.get(family) if family is not None else None
        if keys is None:
            keys = _Keys()
            if family is not None:
                self.families[family] = keys
        known = len(keys.shapes)
        data = _value(value, keys)
        if keys.metadata_keys != len(keys):
            keys.metadata, keys.metadata_keys = _metadata(keys), len(keys)
        if len(keys.shapes) != known:
            self.shapes_learned += len(keys.shapes) - known
            if self.shapes_learned > self.max_shapes:
                self.families.clear()
                self.shapes_learned = 0
            elif family is not None and len(keys) > _MAX_FAMILY_KEYS:
                self.shapes_learned -= len(keys.shapes)
                self.families.pop(family, None)
        return data, keys.metadata

    def _encode_as(self, value: dict, body: BodySpec) -> tuple[bytes, bytes]:
        keys = body.keys
        data = body.encode(value, keys)
        if keys.metadata_keys != len(keys):
            keys.metadata, keys.metadata_keys = _metadata(keys), len(keys)
        if len(keys) > _MAX_FAMILY_KEYS or len(keys.shapes) > self.max_shapes:
            body.forget()  # what the generic walk learned of objects unlike the spec's
        return data, keys.metadata


class BodySpec(Protocol):
    """An encoder compiled for one kind of body, with the key dictionary its values share."""

    keys: _Keys

    def encode(self, obj: dict, keys: _Keys) -> bytes: ...

    def forget(self) -> None: ...


@lru_cache(maxsize=1)
def process_encoder() -> VariantEncoder:
    """The encoder a process shares between its readers, one after another: what one learned
    (shapes compiled, key dictionaries) serves the next. Bounded as every ``VariantEncoder`` is."""
    return VariantEncoder()


def to_variant(value) -> tuple[bytes, bytes]:
    return VariantEncoder().encode(value)
