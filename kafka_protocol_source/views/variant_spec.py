"""VARIANT encoders compiled from the spec: one per message version, for its decoded bodies.

``variant.py`` learns an object's shape from the object; here it is known beforehand, from the
resolved ``spec.ir.Struct`` of the body's message at its version. For each struct of that version
one function is compiled, knowing the field ids, the fields' order by name and each field's Kafka
type, so no shape is looked up per object.

Values are encoded as ``variant.py`` encodes them, with one difference. An int16 field is always
a VARIANT INT16, where ``variant.py`` would write a small value as INT8. int16 is what most
fields of Kafka bodies are (error codes, api keys, versions, partition counts). At a fixed width,
a run of int8, int16, bool and float64 fields has a fixed size, and is written by one
``struct.pack``. An object of nothing else, such as ApiVersions' api key ranges, is then one
constant header and one pack, and an array of such objects one header known from its length and a
pack per element. Wider integers keep the smallest width that holds each value, as
a fixed INT or BIGINT would cost 3 to 7 bytes more per value. Spark reads integers of any width
as the same value (``schema_of_variant`` calls them all BIGINT).

An object that is not what the spec says (a null where the spec has none, read leniently; a body
at ApiVersions' fallback version; keys the decoder adds, such as unknown tagged fields or
embedded consumer protocol data) is encoded by ``variant.py``'s generic walk, object by object,
so its value is the same. This module does not decide which spec a body has: the caller hands
over the api key and version.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache
from itertools import accumulate, repeat

from ..spec.ir import Field, Struct
from ..spec.registry import SpecRegistry
from .variant import (
    _EMPTY_ARRAY,
    _ENCODE_AS,
    _FALSE,
    _SMALL,
    _TEMPLATE_NAMES,
    _TRUE,
    _array,
    _container,
    _getter,
    _Keys,
    _object,
    _object_head,
    _pack,
    _value,
)

# Kafka types written at a fixed width -> (struct format, VARIANT type byte). Booleans are fixed
# too: one byte, the value in its header.
_FIXED = {
    "int8": ("b", 3 << 2),
    "int16": ("h", 4 << 2),
    "float64": ("d", 7 << 2),
}
_WIDE_INTS = frozenset(  # at the smallest width that holds the value, as variant.py writes them
    {"int32", "int64", "uint16", "uint32", "varint", "varlong"}
)
_BOOL = {True: _TRUE[0], False: _FALSE[0]}  # a bool field's header byte; anything else: KeyError
_STRINGS = frozenset({"string", "varint-string", "uuid"})
_BYTES = frozenset({"bytes", "varint-bytes"})


class BodyEncoder:
    """The encoder of one message version's bodies, with the key dictionary they share."""

    __slots__ = ("encode", "keys", "struct")

    def __init__(self, struct_: Struct):
        self.struct = struct_
        self.forget()

    def forget(self) -> None:
        """Start again from the spec's keys alone (compiled again: field ids are in the code)."""
        self.keys = _Keys()
        self.encode: Callable[[dict, _Keys], bytes] = _compile(self.struct, self.keys, {})


class BodyEncoders:
    """Per (api key, version), the encoders of its request and response bodies (None where the
    registry has no such message version), compiled on first use."""

    def __init__(self, registry: SpecRegistry):
        self.registry = registry
        self._known: dict[tuple[int, int, bool], BodyEncoder | None] = {}

    def request(self, api_key: int | None, api_version: int | None) -> BodyEncoder | None:
        return self._get(api_key, api_version, True)

    def response(self, api_key: int | None, api_version: int | None) -> BodyEncoder | None:
        return self._get(api_key, api_version, False)

    def compiled(self) -> list[tuple[int, int, bool]]:
        """(api key, version, is a request) of the bodies whose encoders are compiled so far."""
        return [key for key, found in self._known.items() if found is not None]

    def _get(self, api_key, api_version, request: bool) -> BodyEncoder | None:
        key = (api_key, api_version, request)
        try:
            return self._known[key]
        except KeyError:
            pass
        found = None
        if type(api_key) is int and type(api_version) is int:
            message = self.registry.request(api_key) if request else self.registry.response(api_key)
            if message is not None and api_version in message.valid_versions:
                found = BodyEncoder(self.registry.resolved(message.name, api_version))
        self._known[key] = found
        return found


@lru_cache(maxsize=8)
def body_encoders(registry: SpecRegistry) -> BodyEncoders:
    """One set per registry and process, shared by the readers a Spark worker runs in turn."""
    return BodyEncoders(registry)


def _compile(struct_: Struct, keys: _Keys, compiled: dict[int, Callable]) -> Callable[[dict, _Keys], bytes]:
    """The function that encodes an object of ``struct_`` (the structs below it compiled first)."""
    done = compiled.get(id(struct_))
    if done is not None:
        return done
    fields = sorted(struct_.fields + struct_.tagged, key=lambda f: f.name)
    if len({f.name for f in fields}) != len(fields) or len(fields) >= _SMALL:
        compiled[id(struct_)] = _object
        return _object
    for f in fields:
        if f.name not in keys:
            keys[f.name] = len(keys)
    ids = [keys[f.name] for f in fields]
    scope: dict = {**_TEMPLATE_NAMES, "generic": _object, "bool_": _BOOL, "ids": ids}
    scope["values"] = _values_of([f.name for f in fields])
    scope["errors"] = (struct.error, KeyError, TypeError)
    # The values in parts: a run of fixed-width fields packed together, or one other field. Each
    # field's offset is its part's plus the sizes of the fields before it in the part.
    parts: list[tuple[str, int | None]] = []  # (source of the part's bytes, its size when fixed)
    offsets: list[tuple[int, int]] = []  # per field: (its part, bytes before it in the part)
    i = 0
    while i < len(fields):
        run = []
        while i < len(fields) and _fixed_size(fields[i]):
            run.append(i)
            i += 1
        if run:
            size = 0
            for j in run:
                offsets.append((len(parts), size))
                size += _fixed_size(fields[j])
            fmt, args = _fixed_run([(fields[j], f"v{j}") for j in run])
            pack = _scoped(scope, f"pack{len(parts)}", struct.Struct("<" + fmt).pack)
            parts.append((f"{pack}({', '.join(args)})", size))
        else:
            offsets.append((len(parts), 0))
            parts.append((_expression(fields[i], i, keys, compiled, scope), None))
            i += 1
    n = len(fields)
    src = [
        f"def encode(obj, keys):  # {struct_.name}",
        f"    if len(obj) != {n}:",
        "        return generic(obj, keys)",
        "    try:",
        f"        ({''.join(f'v{j}, ' for j in range(n))}) = values(obj)",
        *(f"        p{k} = {code}" for k, (code, _) in enumerate(parts)),
        "    except errors:",
        "        return generic(obj, keys)",
    ]
    joined = "".join(f"p{k}, " for k in range(len(parts)))
    # Headers for 1- and 2-byte offsets (the usual sizes); anything larger is left to container().
    scope["head1"], scope["head2"] = _object_head(ids, 1), _object_head(ids, 2)
    scope["offsets2"] = struct.Struct(f"<{n + 1}H").pack
    if all(size is not None for _, size in parts):
        starts = list(accumulate((size or 0 for _, size in parts), initial=0))
        at = [starts[part] + within for part, within in offsets] + [starts[-1]]
        size_of_offsets = 1 if starts[-1] < _SMALL else 2 if starts[-1] < 0x10000 else 0
        if size_of_offsets:
            scope["fixed_head"] = _object_head(ids, size_of_offsets) + _pack(at, size_of_offsets)
            src.append(f"    return b''.join((fixed_head, {joined}))")
        else:
            scope["fixed_offsets"] = at
            src.append(f"    return container(({joined}), fixed_offsets, 2, ids)")
    else:
        src.append("    s0 = 0")
        for k, (_, part_size) in enumerate(parts):
            src.append(f"    s{k + 1} = s{k} + {part_size if part_size is not None else f'len(p{k})'}")
        at_src = "".join(f"s{part} + {within}, " if within else f"s{part}, " for part, within in offsets)
        end = f"s{len(parts)}"
        src += [
            f"    if {end} < {_SMALL}:",
            f"        return b''.join((head1, bytes(({at_src}{end},)), {joined}))",
            f"    if {end} < 0x10000:",
            f"        return b''.join((head2, offsets2({at_src}{end}), {joined}))",
            f"    return container(({joined}), [{at_src}{end}], 2, ids)",
        ]
    exec("\n".join(src), scope)  # noqa: S102 - source built here from the spec and fixed templates only
    compiled[id(struct_)] = scope["encode"]
    return scope["encode"]


def _fixed_run(fields: list[tuple[Field, str]]) -> tuple[str, list[str]]:
    """For fixed-width fields (each with the source of its value), the ``struct`` format (without
    byte order) and the pack arguments that write their VARIANT values one after another."""
    fmt, args = "", []
    for f, value in fields:
        if f.kind == "bool":
            fmt += "B"
            args.append(f"bool_[{value}]")
        else:
            char, type_byte = _FIXED[f.kind]
            fmt += "B" + char
            args += [str(type_byte), value]
    return fmt, args


def _fixed_size(f: Field) -> int:
    """Bytes of a fixed-width field's VARIANT value (header included); 0 for any other field."""
    if f.kind == "bool":
        return 1
    fixed = _FIXED.get(f.kind)
    return 1 + struct.calcsize("<" + fixed[0]) if fixed else 0


def _values_of(names: list[str]) -> Callable[[dict], tuple]:
    if len(names) == 1:
        name = names[0]
        return lambda obj: (obj[name],)
    if not names:
        return lambda obj: ()
    return _getter(*names)


def _expression(f: Field, i: int, keys: _Keys, compiled: dict[int, Callable], scope: dict) -> str:
    """Source for the bytes of field number ``i`` (its value in ``v{i}``), for a field that is not
    fixed-width: checked against the type the spec gives, anything else encoded generically."""
    v = f"v{i}"
    other = f"value({v}, keys)"
    if f.kind in _STRINGS:
        return _ENCODE_AS[str].format(i=i)
    if f.kind in _WIDE_INTS:
        return _ENCODE_AS[int].format(i=i)
    if f.kind in _BYTES:
        return _ENCODE_AS[bytes].format(i=i)
    if f.kind == "struct" and f.struct is not None:
        name = _scoped(scope, f"struct{i}", _compile(f.struct, keys, compiled))
        return f"{name}({v}, keys) if type({v}) is dict else {other}"
    if f.kind == "array":
        element = f.element
        if isinstance(element, Struct):
            name = _scoped(scope, f"elements{i}", _compile(element, keys, compiled))
            fixed = _fixed_struct_array(element, keys, scope[name])
            if fixed is not None:
                name = _scoped(scope, f"fixed_elements{i}", fixed)
                return f"{name}({v}, keys) if type({v}) is list else {other}"
            _scoped(scope, "struct_array", _struct_array)
            return f"struct_array({v}, {name}, keys) if type({v}) is list else {other}"
        if element in _FIXED:
            fmt, type_byte = _FIXED[element]
            name = _scoped(scope, f"items{i}", _fixed_array(fmt, type_byte))
            return f"{name}({v}, keys) if type({v}) is list else {other}"
        return _ENCODE_AS[list].format(i=i)  # strings, wider ints: the generic array, without a call to get to it
    return other


def _scoped(scope: dict, name: str, value) -> str:
    scope[name] = value
    return name


def _struct_array(items: list, encode: Callable, keys: _Keys) -> bytes:
    if not items:
        return _EMPTY_ARRAY
    parts = [encode(v, keys) if type(v) is dict else _value(v, keys) for v in items]
    offsets = list(accumulate(map(len, parts), initial=0))
    n = len(parts)
    if n < _SMALL and offsets[-1] < _SMALL:  # inline, as in variant._array: this runs per array
        return bytes((3, n, *offsets)) + b"".join(parts)
    return _container(parts, offsets, 3, None)


def _fixed_struct_array(struct_: Struct, keys: _Keys, element: Callable) -> Callable[[list, _Keys], bytes] | None:
    """For a struct of fixed-width fields only (ApiVersions' api key ranges, say), arrays of it
    encoded in one go: every element has the same size and header, so the array's header for n
    elements is known beforehand, and each element is one ``struct.pack`` of its header and
    values. An array holding anything else (an element not a dict of exactly the spec's fields, a
    value that does not pack) is encoded element by element with ``element``, as any other is."""
    fields = sorted(struct_.fields + struct_.tagged, key=lambda f: f.name)
    if not fields or not all(_fixed_size(f) for f in fields) or len({f.name for f in fields}) != len(fields):
        return None
    fmt, args = _fixed_run([(f, f"x[{f.name!r}]") for f in fields])
    offsets = list(accumulate(map(_fixed_size, fields), initial=0))
    if offsets[-1] >= _SMALL:
        return None
    element_head = _object_head([keys[f.name] for f in fields], 1) + bytes(offsets)
    size = len(element_head) + offsets[-1]
    heads: dict[int, bytes] = {}  # per element count, the array's header and offsets

    def head_of(n: int) -> bytes:
        found = heads.get(n)
        if found is None:
            found = _container([], list(range(0, n * size + 1, size)), 3, None)
            if len(heads) < 256:
                heads[n] = found
        return found

    scope: dict = {
        "pack": struct.Struct(f"<{len(element_head)}s" + fmt).pack,
        "element_head": element_head,
        "bool_": _BOOL,
        "head_of": head_of,
        "one_type": {dict},
        "one_size": {len(fields)},
        "errors": (struct.error, KeyError, TypeError),
        "by_element": _struct_array,
        "element": element,
        "empty": _EMPTY_ARRAY,
    }
    src = [
        f"def encode(items, keys):  # array of {struct_.name}",
        "    if not items:",
        "        return empty",
        "    if set(map(type, items)) == one_type and set(map(len, items)) == one_size:",
        "        try:",
        f"            return head_of(len(items)) + b''.join([pack(element_head, {', '.join(args)}) for x in items])",
        "        except errors:",
        "            pass",
        "    return by_element(items, element, keys)",
    ]
    exec("\n".join(src), scope)  # noqa: S102 - source built here from the spec and fixed templates only
    return scope["encode"]


def _fixed_array(fmt: str, type_byte: int) -> Callable[[list, _Keys], bytes]:
    """Arrays of one fixed-width Kafka type: every element the same size, so the header of an
    array of n of them is known beforehand (here for those whose offsets take a byte each)."""
    pack = struct.Struct("<B" + fmt).pack
    size = struct.calcsize("<B" + fmt)
    heads = [bytes((3, n, *range(0, n * size + 1, size))) for n in range((_SMALL - 1) // size + 1)]
    small = len(heads)

    def encode(items: list, keys: _Keys) -> bytes:
        n = len(items)
        try:
            if n < small:
                return heads[n] + b"".join(map(pack, repeat(type_byte, n), items))
            return _container(list(map(pack, repeat(type_byte, n), items)), list(range(0, n * size + 1, size)), 3, None)
        except struct.error:
            return _array(items, keys)

    return encode
