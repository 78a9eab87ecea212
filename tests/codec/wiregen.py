"""Hypothesis strategy for random wire bytes of a resolved message.

Only used to compare our compiled and interpreted parsers with each other on every message;
correctness against the outside world is checked with independent codecs (tests/oracles).
"""

import struct

from hypothesis import strategies as st

from kafka_protocol_source.spec.ir import Struct

_FIXED = {
    "bool": ">?",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
    "int64": ">q",
    "float64": ">d",
}


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _sized(data: bytes | None, compact: bool, wide: bool) -> bytes:
    if data is None:
        return b"\x00" if compact else (b"\xff\xff\xff\xff" if wide else b"\xff\xff")
    if compact:
        return uvarint(len(data) + 1) + data
    return struct.pack(">i" if wide else ">h", len(data)) + data


def _primitive(kind: str, nullable: bool, compact: bool):
    if kind in _FIXED:
        fmt = _FIXED[kind]
        values = (
            st.booleans()
            if kind == "bool"
            else (
                st.floats(allow_nan=False)
                if kind == "float64"
                else st.integers(
                    *{
                        "b": (-128, 127),
                        "h": (-(2**15), 2**15 - 1),
                        "H": (0, 2**16 - 1),
                        "i": (-(2**31), 2**31 - 1),
                        "I": (0, 2**32 - 1),
                        "q": (-(2**63), 2**63 - 1),
                    }[fmt[1]]
                )
            )
        )
        return values.map(lambda v: struct.pack(fmt, v))
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16)
    if kind == "records":
        return st.just(_sized(None if nullable else b"", compact, True))
    text = st.text(max_size=8).map(str.encode) if kind == "string" else st.binary(max_size=8)
    if nullable:
        text = st.one_of(st.none(), text)
    return text.map(lambda d: _sized(d, compact, kind == "bytes"))


def _array(field, element):
    def encode(items):
        if items is None:
            return b"\x00" if field.compact else b"\xff\xff\xff\xff"
        head = uvarint(len(items) + 1) if field.compact else struct.pack(">i", len(items))
        return head + b"".join(items)

    items = st.lists(element, max_size=3)
    return (st.one_of(st.none(), items) if field.nullable else items).map(encode)


def _field(field, tagged: bool):
    if field.kind == "array":
        el = field.element
        element = message_bytes(el) if isinstance(el, Struct) else _primitive(el, False, field.compact)
        return _array(field, element)
    if field.kind == "struct":
        inner = message_bytes(field.struct)
        if not field.nullable:
            return inner
        present = b"\x01"  # nullable struct marker (int8 1), tagged or not
        absent = b"\x00" if tagged else b"\xff"
        return st.one_of(st.just(absent), inner.map(lambda b: present + b))
    return _primitive(field.kind, field.nullable, field.compact)


def message_bytes(struct_: Struct):
    parts = [_field(f, False) for f in struct_.fields]
    if struct_.flexible:
        tagged = [
            st.one_of(st.none(), _field(f, True).map(lambda b, t=f.tag: uvarint(t) + uvarint(len(b)) + b))
            for f in struct_.tagged
        ]
        unknown = st.lists(st.binary(max_size=4), max_size=2).map(
            lambda vals: [uvarint(1000 + i) + uvarint(len(v)) + v for i, v in enumerate(vals)]
        )

        def tag_section(present, extra):
            entries = [p for p in present if p is not None] + extra
            return uvarint(len(entries)) + b"".join(entries)

        parts.append(st.builds(tag_section, st.tuples(*tagged) if tagged else st.just(()), unknown))
    return st.tuples(*parts).map(b"".join) if parts else st.just(b"")
