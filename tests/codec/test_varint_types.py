"""The record-level types only krammar definitions spell: zigzag varint/varlong, varint-length
strings, bytes and arrays, and length-field-minus bytes.

Messages are built as IR by hand, resolved, and decoded by both the compiled and the interpreted
parser. The bytes come from kafka-python (``encode_varint`` and its v2 ``DefaultRecordBatchBuilder``),
never from an encoder of ours, and its ``DefaultRecordBatch`` reader gives the expected values.
"""

import struct
import tracemalloc
from io import BytesIO

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from kafka_protocol_source.codec import constructs as k
from kafka_protocol_source.codec.builder import build_parser, min_struct_size
from kafka_protocol_source.codec.decoder import Decoder
from kafka_protocol_source.codec.errors import DecodeError, Truncated, WireError
from kafka_protocol_source.spec.ir import FieldDef, TypeRef
from kafka_protocol_source.spec.registry import SpecRegistry

from .common import common, decode_both
from .record_shapes import ALL, HEADER_SIZE, RECORD, RECORD_BATCH, build_batch, field, message, sized, zigzag

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

MESSAGES = [
    RECORD_BATCH,
    RECORD,
    message("Varint", field("V", "varint")),
    message("Varlong", field("V", "varlong")),
    message("Texts", field("S", "varint-string"), field("B", "varint-bytes")),
    message("Items", field("Items", "varint[]Item", fields=[field("Id", "varint"), field("Name", "varint-string")])),
    message("NullableItems", field("Items", "varint[]Item", nullable=True, fields=[field("Id", "varint")])),
    message("Longs", field("Values", "varint[]varlong")),
    message("Flexible", field("S", "varint-string"), field("Values", "varint[]int32"), flexible=True),
    message(
        "Sized", field("Length", "int32"), field("Extra", "int8"), field("Data", "bytes", length_from=("Length", 5))
    ),
    message("SizedByVarint", field("Size", "varint"), field("Data", "bytes", length_from=("Size", 0))),
]
DECODER = Decoder(SpecRegistry({m.name: m for m in MESSAGES}, "tests/codec/test_varint_types.py"))


def decode(name: str, data: bytes) -> dict:
    return decode_both(DECODER.parsers.get(name, 0), data)


def decode_error(name: str, data: bytes) -> DecodeError:
    """The decoder's error for bytes both parsers refuse: it runs the compiled one, then re-reads
    interpreted to say where (and says so when only the compiled one failed)."""
    with pytest.raises(DecodeError) as raised:
        DECODER.parse_message(name, 0, data)
    assert "compiled parser failed" not in raised.value.reason
    assert isinstance(raised.value.__cause__, WireError), raised.value
    return raised.value


def assert_every_cut_truncated(name: str, data: bytes) -> None:
    for cut in range(len(data)):
        error = decode_error(name, data[:cut])
        assert error.truncated and isinstance(error.__cause__, Truncated), (cut, error)


# -- zigzag varints ------------------------------------------------------------------------------


def examples(*values):
    def apply(test):
        for value in values:
            test = example(value)(test)
        return test

    return apply


EDGES = (0, -1, 1, 63, -64, 64, -65, INT32[0], INT32[1])


@settings(max_examples=300, deadline=None)
@given(st.integers(*INT32))
@examples(*EDGES)
def test_varint_zigzag(value):
    assert decode("Varint", zigzag(value)) == {"v": value}


@settings(max_examples=300, deadline=None)
@given(st.integers(*INT64))
@examples(*EDGES, INT32[0] - 1, INT32[1] + 1, INT64[0], INT64[1])
def test_varlong_zigzag(value):
    assert decode("Varlong", zigzag(value)) == {"v": value}


@pytest.mark.parametrize("value", [0, -1, 1, INT32[0], INT32[1], 300])
def test_varint_primitive_common(value):
    common(k.Primitive("varint"), zigzag(value), value)
    common(k.Primitive("varlong"), zigzag(value), value)


@pytest.mark.parametrize(
    "name,data",
    [
        ("Varint", zigzag(INT32[1] + 1)),
        ("Varint", zigzag(INT32[0] - 1)),
        ("Varlong", b"\xff" * 9 + b"\x03"),  # 2**65 - 1: ten bytes, but 65 bits
    ],
)
def test_a_varint_too_wide_for_its_type_is_an_error(name, data):
    assert "does not fit" in decode_error(name, data).reason


@pytest.mark.parametrize("name,longest", [("Varint", 5), ("Varlong", 10)])
def test_a_varint_longer_than_its_type_is_an_error(name, longest):
    error = decode_error(name, b"\x80" * longest + b"\x00")
    assert not error.truncated and f"longer than {longest}" in error.reason


@pytest.mark.parametrize("name,value", [("Varint", INT32[0]), ("Varlong", INT64[1])])
def test_varint_truncated_at_every_cut(name, value):
    assert_every_cut_truncated(name, zigzag(value))


# -- varint-length strings and bytes ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text,data",
    [
        ("", b""),
        ("ключ", b"\x00\xff"),
        (None, None),
        ("x" * 200, b"y" * 9000),
        (None, b"v"),
        ("k", None),
    ],
)
def test_varint_string_and_bytes(text, data):
    wire = sized(None if text is None else text.encode()) + sized(data)
    assert decode("Texts", wire) == {"s": text, "b": data}
    if text is not None and data is not None:
        assert_every_cut_truncated("Texts", wire)


def test_varint_string_bad_utf8_is_replaced_like_java():
    assert decode("Texts", sized(b"a\xffb") + sized(b""))["s"] == "a\ufffdb"


@pytest.mark.parametrize("length", [-2, INT32[0]])
def test_a_varint_length_below_minus_one_is_an_error(length):
    error = decode_error("Texts", zigzag(length))
    assert not error.truncated and error.path == "s" and f"negative length {length}" in error.reason


def test_non_nullable_varint_string_rejects_null():
    with pytest.raises(WireError, match="null where not nullable"):
        k.Primitive("varint-string", nullable=False)._parse(BytesIO(zigzag(-1)), None, "")
    common(k.Primitive("varint-bytes", nullable=True), zigzag(-1), None)


def test_a_claimed_length_beyond_the_bytes_left_is_truncated():
    error = decode_error("Texts", zigzag(INT32[1]) + b"abc")
    assert error.truncated and "claimed length 2147483647" in error.reason


def test_varint_types_are_never_compact():
    wire = sized(b"t") + zigzag(2) + struct.pack(">ii", 7, -7) + b"\x00"  # empty tag section
    assert decode("Flexible", wire) == {"s": "t", "values": [7, -7]}


# -- varint-count arrays ------------------------------------------------------------------------------


@pytest.mark.parametrize("items", [[], [(0, "")], [(-1, None), (INT32[1], "ünï"), (5, "x" * 130)]])
def test_varint_count_array_of_structs(items):
    wire = zigzag(len(items)) + b"".join(zigzag(i) + sized(None if s is None else s.encode()) for i, s in items)
    assert decode("Items", wire) == {"items": [{"id": i, "name": s} for i, s in items]}
    assert_every_cut_truncated("Items", wire)


def test_varint_count_array_of_primitives():
    values = [0, -1, INT64[0], INT64[1]]
    assert decode("Longs", zigzag(len(values)) + b"".join(map(zigzag, values))) == {"values": values}


def test_varint_count_null_array():
    assert decode("NullableItems", zigzag(-1)) == {"items": None}
    error = decode_error("Items", zigzag(-1))
    assert error.path == "items" and "null" in error.reason


def test_varint_count_below_minus_one_is_an_error():
    assert "negative count -2" in decode_error("NullableItems", zigzag(-2)).reason


def test_varint_count_beyond_the_bytes_left_is_truncated_before_any_element():
    # Each Item takes at least 2 bytes: 40 of them cannot fit in 79 bytes.
    error = decode_error("Items", zigzag(40) + b"\x00" * 79)
    assert error.truncated and "claimed 40 elements" in error.reason


# -- length-field-minus bytes -----------------------------------------------------------------------


@pytest.mark.parametrize("payload", [b"", b"abc", bytes(range(256)) * 3])
def test_length_field_minus(payload):
    wire = struct.pack(">ib", len(payload) + 5, -3) + payload
    assert decode("Sized", wire) == {"length": len(payload) + 5, "extra": -3, "data": payload}
    assert_every_cut_truncated("Sized", wire)


def test_length_field_minus_from_a_varint():
    assert decode("SizedByVarint", zigzag(4) + b"\x00\x01\x02\x03") == {"size": 4, "data": b"\x00\x01\x02\x03"}
    assert "length is -1" in decode_error("SizedByVarint", zigzag(-1)).reason


@pytest.mark.parametrize("length", [4, 0, INT32[0]])
def test_length_field_minus_negative_is_an_error(length):
    error = decode_error("Sized", struct.pack(">ib", length, 0) + b"spare")
    assert not error.truncated and error.path == "data" and f"length is {length - 5}" in error.reason


def test_length_field_minus_beyond_the_bytes_left_is_truncated_without_allocating_it():
    wire = struct.pack(">ib", INT32[1], 0) + b"only a few bytes"
    tracemalloc.start()
    try:
        error = decode_error("Sized", wire)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.truncated and error.path == "data"
    assert peak < 1 << 20  # the claim was 2 GiB


def test_minimum_sizes():
    assert min_struct_size(DECODER.registry.resolved("Record", 0)) == 7  # six varints of 1+ bytes, one int8
    assert min_struct_size(DECODER.registry.resolved("Sized", 0)) == 5  # the sized bytes may be empty
    assert min_struct_size(DECODER.registry.resolved("Flexible", 0)) == 3  # two varints and the tag section


def test_a_tagged_length_field_minus_is_refused():
    tagged = FieldDef("Data", TypeRef.parse("bytes"), ALL, tagged_versions=ALL, tag=0, length_from=("Size", 0))
    bad = message("Bad", field("Size", "int32"), tagged, flexible=True)
    with pytest.raises(ValueError, match="cannot be tagged"):
        build_parser(SpecRegistry({"Bad": bad}).resolved("Bad", 0))


# -- a real v2 record batch from kafka-python ---------------------------------------------------------

_HEADERS = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)
_ENTRY = st.tuples(
    st.integers(-70_000, 70_000),
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.binary(max_size=200)),
    _HEADERS,
)


def check_batch(wire: bytes) -> None:
    expected = DefaultRecordBatch(bytearray(wire))
    batch = decode("RecordBatch", wire)
    assert batch == {
        "first_offset": expected.base_offset,
        "length": expected.size_in_bytes - 12,
        "partition_leader_epoch": expected.leader_epoch,
        "magic": expected.magic,
        "crc": struct.unpack(">i", struct.pack(">I", expected.crc))[0],
        "attributes": expected.attributes,
        "last_offset_delta": expected.last_offset_delta,
        "first_timestamp": expected.first_timestamp,
        "max_timestamp": expected.max_timestamp,
        "producer_id": expected.producer_id,
        "producer_epoch": expected.producer_epoch,
        "first_sequence": expected.base_sequence,
        "num_records": expected.records_count,
        "records": wire[HEADER_SIZE:],
    }
    io = BytesIO(batch["records"])
    for want in expected:
        start = io.tell()
        length = DECODER.parsers.get("Record", 0).interpreted._parse(io, None, "")["length"]
        record = decode("Record", batch["records"][start : io.tell()])
        assert record == {
            "length": want.size_in_bytes,
            "attributes": 0,
            "timestamp_delta": want.timestamp - expected.first_timestamp,
            "offset_delta": want.offset - expected.base_offset,
            "key": want.key,
            "value": want.value,
            "headers": [{"key": k_, "value": v} for k_, v in want.headers],
        }
        assert io.tell() - start == len(zigzag(length)) + length
    assert io.tell() == len(batch["records"])


@settings(max_examples=60, deadline=None)
@given(st.lists(_ENTRY, min_size=1, max_size=4), st.integers(0, 2**41))
def test_record_batch_from_kafka_python(entries, first_timestamp):
    check_batch(build_batch(entries, first_timestamp))


def test_record_batch_with_producer_state_and_a_big_record():
    entries = [(0, b"key", b"v" * 20_000, [("h\u00e9", b"1"), ("n", None)]), (-5_000_000, None, None, [])]
    wire = build_batch(entries, 1_700_000_000_000, producer=(2**40, 7, 1_000))
    check_batch(wire)
    assert decode("RecordBatch", wire)["producer_id"] == 2**40


def test_record_batch_and_record_truncated_at_every_cut():
    wire = build_batch([(3, b"k", b"value", [("a", b"b"), ("c", None)])], 1_234_567)
    assert_every_cut_truncated("RecordBatch", wire)
    assert_every_cut_truncated("Record", wire[HEADER_SIZE:])


def test_record_batch_whose_length_is_below_its_header_is_an_error():
    wire = bytearray(build_batch([(0, None, b"v", [])], 0))
    struct.pack_into(">i", wire, 8, 48)
    error = decode_error("RecordBatch", bytes(wire))
    assert error.path == "records" and "length is -1" in error.reason


def test_record_header_with_a_bad_value_length_says_where():
    record = build_batch([(0, None, b"v", [("a", b"b")])], 0)[HEADER_SIZE:]
    at = record.rindex(zigzag(1) + b"b")  # the header value's length
    assert decode_error("Record", record[:at] + zigzag(-3) + record[at + 1 :]).path == "headers[0].value"
