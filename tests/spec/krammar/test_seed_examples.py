"""Every example of the krammar seed parses to the structure the seed describes."""

from __future__ import annotations

from kafka_protocol_source.spec.ir import FieldDef, TypeRef
from kafka_protocol_source.spec.krammar import lower_document, lower_shared_structs, parse_krammar
from kafka_protocol_source.spec.registry import SpecRegistry
from kafka_protocol_source.spec.versions import NONE, VersionRange

from . import seed_examples as seed

ALL = VersionRange.parse("0+")


def only(text):
    (definition,) = parse_krammar(text).definitions
    return definition


def test_struct_and_field_comments_sit_above_what_they_describe():
    foo = only(seed.COMMENTS)
    assert foo.comment == ("// FooRequest is a foo request.",)
    (field,) = foo.fields
    assert (field.name, field.type.base, field.comment) == ("FooField", "string", ("// FooField is a string.",))


def test_a_version_comment_follows_its_field():
    (field,) = only(seed.FIELD_VERSION).fields
    assert field.versions == VersionRange.parse("1+")


def test_both_forms_of_version_comment():
    open_ended, closed = only("FooRequest =>\n  A: int8 // v1+\n  B: int8 // v8-v9\n").fields
    assert (open_ended.versions, closed.versions) == (VersionRange.parse("1+"), VersionRange.parse("8-9"))


def test_a_struct_fields_version_bounds_the_fields_inside_it():
    (field,) = only(seed.STRUCT_FIELD_VERSION).fields
    assert field.versions == VersionRange.parse("3-5")
    assert field.type.anonymous and field.type.array == "array"
    assert [(f.name, f.type.base, f.versions) for f in field.type.fields] == [
        ("Biz", "int8", None),
        ("Bar", "int8", None),
        ("Baz", "int8", None),
    ]
    assert field.comment == ("// All fields in FooField are bounded between version 3 and 5.",)


def test_the_three_kinds_of_array():
    _header, arrays = parse_krammar(seed.ARRAYS).definitions
    kinds = {f.name: (f.type.array, f.type.base, f.type.nullable) for f in arrays.fields}
    assert kinds == {
        "Booleans": ("array", "bool", False),
        "Int8s": ("nullable", "int8", True),
        "Headers": ("varint", "Header", False),
        "Anonymous": ("array", "=>", False),
    }
    structs = {s.name: s for s in lower_shared_structs(parse_krammar(seed.ARRAYS))}
    fields = {f.name: f for f in structs["Arrays"].fields}
    assert fields["Int8s"].nullable_versions == ALL and fields["Booleans"].nullable_versions == NONE
    assert fields["Headers"].type == TypeRef("Header", True, varint_count=True)
    assert fields["Anonymous"].type == TypeRef("ArraysAnonymou", True)  # franz-go's singular: one "s" off
    key, _value = structs["Header"].fields
    assert key.type == TypeRef("varint-string") and key.nullable_versions == ALL  # a varint length may be -1


def test_named_anonymous_and_nested_structs():
    simple, foo = parse_krammar(seed.STRUCTS).definitions
    assert simple.name == "SimpleType" and [f.name for f in simple.fields] == ["Field1"]
    assert [f.name for f in foo.fields] == ["Field1", "Field2", "Field3Pluralies", "Field4"]
    pluralies = foo.fields[2]
    assert pluralies.type.anonymous and pluralies.type.array == "array" and pluralies.type.hint == "Field3Pluraly"
    inner = {f.name: f.type for f in pluralies.type.fields}
    assert list(inner) == ["InnerField1", "InnerField2", "InnerField3", "InnerField4s", "InnerField5"]
    assert (inner["InnerField2"].base, inner["InnerField2"].nullable) == ("bytes", True)
    assert (inner["InnerField3"].base, inner["InnerField3"].array) == ("SimpleType", "array")  # named, in an array
    assert inner["InnerField4s"].anonymous and inner["InnerField4s"].array == "array"  # anonymous, in an array
    assert inner["InnerField5"].anonymous and inner["InnerField5"].array == ""  # anonymous, not in an array
    assert [(f.name, f.type.base) for f in inner["InnerField4s"].fields] == [("InnerInner", "string")]
    assert [(f.name, f.type.base) for f in inner["InnerField5"].fields] == [("SuperIn", "varint")]

    lowered = {s.name: s for s in lower_shared_structs(parse_krammar(seed.STRUCTS))}
    field3 = lowered["FooRequest"].fields[2]
    assert field3.type == TypeRef("Field3Pluraly", True)  # the name hint names the struct
    nested = {f.name: f for f in field3.fields}
    assert nested["InnerField3"].type == TypeRef("SimpleType", True) and not nested["InnerField3"].fields
    assert nested["InnerField4s"].type == TypeRef("Field3PluralyInnerField4", True)
    assert nested["InnerField5"].type == TypeRef("Field3PluralyInnerField5", False)


def test_length_field_minus_reads_its_size_from_an_earlier_field():
    batch = only(seed.LENGTH_FIELD_MINUS)
    assert batch.no_encoding and not batch.with_version_field
    records = batch.fields[-1]
    assert (records.type.base, records.type.length_field, records.type.length_minus) == (
        "length-field-minus",
        "Length",
        49,
    )
    (lowered,) = lower_shared_structs(parse_krammar(seed.LENGTH_FIELD_MINUS))
    assert lowered.fields[-1] == FieldDef("Records", TypeRef("bytes"), ALL, length_from=("Length", 49))


def test_named_struct_modifiers_and_request_response_pairs():
    definitions = {d.name: d for d in parse_krammar(seed.MODIFIERS).definitions}
    assert definitions["Record"].role == "struct"
    routing = {n: (d.role, d.api_key, d.max_version, d.routing) for n, d in definitions.items() if d.role == "request"}
    assert routing == {
        "ProduceRequest": ("request", 0, 10, None),
        "DeleteTopicRequest": ("request", 1, 2, "admin"),
        "JoinGroupRequest": ("request", 2, 3, "group coordinator"),
        "TxnCommitRequest": ("request", 3, 8, "txn coordinator"),
    }
    messages = lower_document(parse_krammar(seed.MODIFIERS))
    assert sorted(messages) == sorted(n for n in definitions if n != "Record")
    for name, message in messages.items():
        request = messages[name.replace("Response", "Request")]
        assert (message.api_key, message.valid_versions) == (request.api_key, request.valid_versions)
        assert message.kind == ("request" if name.endswith("Request") else "response")
    produce = messages["ProduceRequest"]
    assert produce.valid_versions == VersionRange.parse("0-10") and produce.flexible_versions == NONE
    assert [s.name for s in produce.common_structs] == ["Record"]  # the shared struct it uses
    assert messages["DeleteTopicRequest"].common_structs == ()


def test_with_version_field_starts_with_the_version():
    sticky = only(seed.VERSION_FIELD)
    assert sticky.with_version_field
    assert [(f.name, f.type.base) for f in sticky.fields] == [("Version", "int16"), ("Generation", "int32")]


def test_a_struct_fields_versions_bound_its_fields_when_resolved():
    """The seed's FooField example as a real request: FooField and the fields inside it exist in
    v3-v5 only, though Biz, Bar and Baz carry no version comment of their own."""
    text = (
        seed.STRUCT_FIELD_VERSION.replace("FooRequest =>", "FooRequest => key 0, max version 9")
        + "\nFooResponse =>\n  ErrorCode: int16\n"
    )
    registry = SpecRegistry(lower_document(parse_krammar(text)))
    for version, present in ((2, False), (3, True), (5, True), (6, False)):
        struct = registry.resolved("FooRequest", version)
        assert [f.name for f in struct.fields] == (["foo_field"] if present else []), version
        if present:
            assert [f.name for f in struct.fields[0].element.fields] == ["biz", "bar", "baz"]


def test_definitions_without_modifiers_are_structs_not_requests():
    """The seed's own FooRequest examples carry no 'key N, max version M': they parse (as named
    structs), and only become requests with those modifiers."""
    for text in (seed.COMMENTS, seed.FIELD_VERSION, seed.STRUCTS):
        assert all(d.role == "struct" for d in parse_krammar(text).definitions)
        assert lower_document(parse_krammar(text)) == {}
