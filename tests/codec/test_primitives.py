import struct
import uuid
from io import BytesIO

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_protocol_source.codec import constructs as k
from kafka_protocol_source.codec import runtime
from kafka_protocol_source.codec.errors import WireError

from .common import common, parse_both


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


@pytest.mark.parametrize(
    "kind,fmt,value",
    [
        ("int8", ">b", -128),
        ("int8", ">b", 127),
        ("int16", ">h", -2),
        ("int32", ">i", 2**31 - 1),
        ("int64", ">q", -(2**63)),
        ("uint16", ">H", 65535),
        ("uint32", ">I", 2**32 - 1),
        ("float64", ">d", 1.5),
    ],
)
def test_fixed_width(kind, fmt, value):
    common(k.Primitive(kind), struct.pack(fmt, value), value)


@pytest.mark.parametrize("data,value", [(b"\x00", False), (b"\x01", True), (b"\x02", True)])
def test_bool_is_nonzero(data, value):
    common(k.Primitive("bool"), data, value)


def test_uuid_is_canonical_string():
    u = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
    common(k.Primitive("uuid"), u.bytes, str(u))


@given(st.integers(0, 2**32 - 1))
def test_uvarint_roundtrip(n):
    data = uvarint(n)
    assert runtime.read_uvarint(BytesIO(data)) == n


def test_uvarint_too_long_is_an_error():
    with pytest.raises(WireError, match="longer than 5"):
        runtime.read_uvarint(BytesIO(b"\xff" * 6))


@pytest.mark.parametrize("nullable", [False, True])
@pytest.mark.parametrize("text", ["", "topic-α", "x" * 300])
def test_strings(text, nullable):
    raw = text.encode()
    common(k.Primitive("string", nullable), struct.pack(">h", len(raw)) + raw, text)
    common(k.Primitive("string", nullable, compact=True), uvarint(len(raw) + 1) + raw, text)


def test_null_strings_only_where_nullable():
    common(k.Primitive("string", True), b"\xff\xff", None)
    common(k.Primitive("string", True, compact=True), b"\x00", None)
    with pytest.raises(WireError, match="null where not nullable"):
        runtime.read_string(BytesIO(b"\xff\xff"), False)
    with pytest.raises(WireError, match="null where not nullable"):
        runtime.read_compact_string(BytesIO(b"\x00"), False)


def test_invalid_utf8_is_replaced_like_java():
    assert runtime.read_string(BytesIO(b"\x00\x02\xff\xfe"), False) == "\ufffd\ufffd"


@pytest.mark.parametrize("nullable", [False, True])
@given(data=st.binary(max_size=300))
def test_bytes(nullable, data):
    common(k.Primitive("bytes", nullable), struct.pack(">i", len(data)) + data, data)
    common(k.Primitive("bytes", nullable, compact=True), uvarint(len(data) + 1) + data, data)


def test_null_bytes():
    common(k.Primitive("bytes", True), b"\xff\xff\xff\xff", None)
    common(k.Primitive("bytes", True, compact=True), b"\x00", None)


@pytest.mark.parametrize(
    "construct,data",
    [
        (k.Primitive("string"), b"\x7f\xff" + b"a" * 10),
        (k.Primitive("string", compact=True), uvarint(2**31) + b"a"),
        (k.Primitive("bytes"), b"\x7f\xff\xff\xff" + b"a" * 10),
        (k.Primitive("bytes", compact=True), uvarint(2**32 - 1)),
    ],
)
def test_claimed_length_beyond_input_is_an_error(construct, data):
    with pytest.raises(WireError, match="claimed length"):
        construct._parse(BytesIO(data), None, "")


def test_arrays_plain_compact_and_null():
    ints = k.Primitive("int32")
    common(k.Array(ints, False, False, 4), struct.pack(">iii", 2, 7, -1), [7, -1])
    common(k.Array(ints, True, False, 4), struct.pack(">i", -1), None)
    common(k.Array(ints, False, True, 4), uvarint(3) + struct.pack(">ii", 1, 2), [1, 2])
    common(k.Array(ints, True, True, 4), b"\x00", None)
    with pytest.raises(WireError, match="null where not nullable"):
        k.Array(ints, False, False, 4)._parse(BytesIO(struct.pack(">i", -1)), None, "")


def test_huge_array_count_fails_before_building_elements():
    array = k.Array(k.Primitive("int8"), False, False, 1)
    with pytest.raises(WireError, match="claimed 2147483647 elements"):
        array._parse(BytesIO(struct.pack(">i", 2**31 - 1) + b"\x00" * 100), None, "")


def test_struct_and_nullable_struct_markers():
    inner = k.Struct("Inner", [("a", k.Primitive("int16"))], [], flexible=False)
    common(k.NullableStruct(inner, tagged=False), b"\x01\x00\x05", {"a": 5})
    common(k.NullableStruct(inner, tagged=False), b"\xff", None)
    common(k.NullableStruct(inner, tagged=True), b"\x01\x00\x05", {"a": 5})
    common(k.NullableStruct(inner, tagged=True), b"\x00", None)
    with pytest.raises(WireError, match="marker 0 is neither -1 nor 1"):
        k.NullableStruct(inner, tagged=False)._parse(BytesIO(b"\x00"), None, "")


def _tagged_struct():
    return k.Struct(
        "T",
        [("a", k.Primitive("int8"))],
        [(0, "known", k.Primitive("int32"), -1), (3, "name", k.Primitive("string", True, True), None)],
        flexible=True,
    )


def test_tag_section_known_unknown_and_defaults():
    s = _tagged_struct()
    # a=1; 2 tagged fields: tag 0 (4 bytes) = 9, tag 7 (unknown, 2 bytes)
    data = b"\x01" + b"\x02" + b"\x00\x04" + struct.pack(">i", 9) + b"\x07\x02ab"
    common(s, data, {"a": 1, "known": 9, "name": None, "unknown_tagged_fields": {7: b"ab"}})
    common(s, b"\x01\x00", {"a": 1, "known": -1, "name": None})


def test_tagged_value_must_use_exactly_its_size():
    data = b"\x01" + b"\x01" + b"\x00\x05" + struct.pack(">i", 9) + b"\x00"
    with pytest.raises(WireError, match="used 4 of its 5 bytes") as e:
        _tagged_struct()._parse(BytesIO(data), None, "")
    assert e.value.path == ["known"]


def test_error_path_and_offset_through_arrays_and_structs():
    item = k.Struct("Item", [("id", k.Primitive("int32")), ("name", k.Primitive("string"))], [], False)
    outer = k.Struct("Outer", [("items", k.Array(item, False, False, 6))], [], False)
    data = struct.pack(">i", 2) + struct.pack(">ih", 1, 1) + b"x" + struct.pack(">ih", 2, 50) + b"short"
    with pytest.raises(WireError) as e:
        outer._parse(BytesIO(data), None, "")
    assert e.value.dotted_path == "items[1].name"
    assert e.value.offset == 4 + 7 + 4
    one_item = struct.pack(">i", 1) + data[4:11]
    interpreted, compiled, _ = parse_both(outer, one_item)
    assert interpreted == compiled == {"items": [{"id": 1, "name": "x"}]}
