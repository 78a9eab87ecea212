"""Round trips: any IR krammar can express renders to text that lowers back to the same IR, and
render -> parse -> render gives the same text (hypothesis, over generated messages). What it
cannot express, the renderer refuses rather than writing text that reads back differently."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source.spec.ir import FieldDef, MessageDef, StructDef, TypeRef
from kafka_protocol_source.spec.krammar import RenderError, lower_document, parse_krammar, render_krammar
from kafka_protocol_source.spec.krammar.words import default_struct_name
from kafka_protocol_source.spec.versions import NONE, OPEN_END, VersionRange

NAMES = [
    "Topic",
    "Topics",
    "Partition",
    "Partitions",
    "ErrorCode",
    "Name",
    "Value",
    "Records",
    "Length",
    "Id",
    "Brokers",
    "Host",
    "Port",
    "Rack",
    "Members",
    "Assignment",
    "Cursor",
    "Epoch",
    "Data",
    "Flags",
]
SCALARS = [
    "bool",
    "int8",
    "int16",
    "uint16",
    "int32",
    "int64",
    "uint32",
    "float64",
    "varint",
    "varlong",
    "uuid",
    "string",
    "bytes",
    "records",
    "varint-string",
    "varint-bytes",
]
NULLABLE = {"string", "bytes", "records"}
INTS = {"int8", "int16", "int32", "int64", "uint16", "uint32", "varint", "varlong"}
DEFAULTS = {
    "bool": ["true", "False"],
    "float64": ["1.5", "-0.25"],
    "string": ["", "x.y", "a b"],
    "uuid": ["0"],
    "bytes": ["0"],
    "records": ["0"],
    "varint-string": ["abc"],
    "varint-bytes": ["0"],
    **{t: ["-1", "0x7f", "0"] for t in ("int8", "int16", "int32", "int64", "varint", "varlong")},
    "uint16": ["0", "65535"],
    "uint32": ["0", "0xffffffff"],
}
SHARED = ("SharedOne", "SharedTwo")
ALL = VersionRange(0, OPEN_END)


@st.composite
def ranges(draw, allow_none=False):
    if allow_none and draw(st.booleans()):
        return NONE
    low = draw(st.integers(0, 6))
    high = OPEN_END if draw(st.booleans()) else draw(st.integers(low, 9))
    return VersionRange(low, high)


@st.composite
def field_defs(draw, name: str, parent: str, depth: int, shared: tuple[str, ...], earlier: list[FieldDef]):
    versions = draw(ranges())
    shape = draw(
        st.sampled_from(
            ["scalar", "scalar", "array", "struct", "array-struct", "shared", "length"]
            if depth < 2
            else ["scalar", "array", "length"]
        )
    )
    nullable, fields, length_from, defaults = NONE, (), None, []
    maybe_nullable = st.one_of(st.just(NONE), st.just(versions), ranges())
    ints = [
        f.name
        for f in earlier
        if f.type.name in INTS
        and not f.type.is_array
        and f.length_from is None
        and f.versions.low <= versions.low
        and versions.high <= f.versions.high
    ]
    if shape == "length" and not ints:
        shape = "scalar"
    if shape == "length":
        type_ref, length_from = TypeRef("bytes"), (draw(st.sampled_from(ints)), draw(st.integers(0, 99)))
    elif shape in ("struct", "array-struct"):
        is_array = shape == "array-struct"
        struct_name = draw(st.sampled_from([default_struct_name(parent, name, is_array), "HintedName", "Other"]))
        fields = draw(struct_fields(struct_name, depth + 1, shared))
        type_ref, nullable = TypeRef(struct_name, is_array), draw(maybe_nullable)
    elif shape == "shared" and shared:
        type_ref, nullable = TypeRef(draw(st.sampled_from(shared)), draw(st.booleans())), draw(maybe_nullable)
    elif shape == "array":
        element = draw(st.sampled_from([s for s in SCALARS if s not in ("varint-string", "varint-bytes")]))
        varint = draw(st.booleans())
        type_ref = TypeRef(element, True, varint)
        nullable = NONE if varint else draw(maybe_nullable)
    else:
        scalar = draw(st.sampled_from(SCALARS))
        type_ref, defaults = TypeRef(scalar), DEFAULTS[scalar]
        if scalar in ("varint-string", "varint-bytes"):
            nullable = versions
        elif scalar in NULLABLE:
            nullable = draw(maybe_nullable)
    if length_from is None and (defaults or not nullable.empty):
        choices = defaults + (["null"] if not nullable.empty else [])
        default = draw(st.one_of(st.none(), st.sampled_from(choices)))
    else:
        default = None
    tag = draw(st.one_of(st.none(), st.integers(0, 40)))
    return FieldDef(
        name=name,
        type=type_ref,
        versions=versions,
        nullable_versions=nullable,
        tagged_versions=NONE if tag is None else draw(st.one_of(st.just(versions), ranges(allow_none=True))),
        tag=tag,
        flexible_versions=draw(st.one_of(st.none(), ranges(allow_none=True))),
        default=default,
        map_key=draw(st.booleans()),
        entity_type=draw(st.sampled_from([None, "topicName", "brokerId"])),
        ignorable=draw(st.booleans()),
        zero_copy=draw(st.booleans()),
        fields=fields,
        length_from=length_from,
    )


@st.composite
def struct_fields(draw, parent: str, depth: int, shared: tuple[str, ...]):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    fields: list[FieldDef] = []
    for name in names:
        field = draw(field_defs(name, parent, depth, shared, fields))
        if field.tag is not None and any(f.tag == field.tag for f in fields):
            field = replace(field, tag=None, tagged_versions=NONE)
        fields.append(field)
    return tuple(fields)


@st.composite
def message_sets(draw):
    shared_structs = tuple(
        StructDef(name, ALL, draw(struct_fields(name, 2, ()))) for name in SHARED[: draw(st.integers(0, 2))]
    )
    key = draw(st.integers(0, 200))
    valid = draw(ranges())
    flexible = draw(st.one_of(st.just(NONE), st.builds(lambda n: VersionRange(n, OPEN_END), st.integers(0, 9))))
    owners = {
        s.name: draw(st.sampled_from([("request",), ("response",), ("request", "response")])) for s in shared_structs
    }
    common = {side: tuple(s for s in shared_structs if side in owners[s.name]) for side in ("request", "response")}
    shared_names = {side: tuple(s.name for s in structs) for side, structs in common.items()}
    request = MessageDef(
        "ThingRequest",
        "request",
        key,
        valid,
        flexible,
        draw(struct_fields("ThingRequest", 0, shared_names["request"])),
        common["request"],
        latest_version_unstable=draw(st.booleans()),
        deprecated_versions=draw(ranges(allow_none=True)),
        listeners=tuple(draw(st.lists(st.sampled_from(["broker", "controller", "zkBroker"]), unique=True))),
    )
    response = MessageDef(
        "ThingResponse",
        "response",
        key,
        valid,
        flexible,
        draw(struct_fields("ThingResponse", 0, shared_names["response"])),
        common["response"],
    )
    others = [
        MessageDef(
            f"Thing{kind.title()}",
            kind,
            None,
            draw(ranges()),
            flexible,
            draw(struct_fields(f"Thing{kind.title()}", 0, ())),
        )
        for kind in ("data", "header")
        if draw(st.booleans())
    ]
    return [request, response, *others]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_sets())
def test_generated_messages_survive_render_and_parse(messages):
    text = render_krammar(messages, ["generated"])
    lowered = lower_document(parse_krammar(text))
    assert lowered == {m.name: m for m in messages}, text
    assert render_krammar(lowered.values(), ["generated"]) == text


def test_nothing_renders_to_an_empty_file():
    assert render_krammar([]) == ""
    assert lower_document(parse_krammar("")) == {}


PAIR = [MessageDef("ARequest", "request", 0, ALL, NONE, ()), MessageDef("AResponse", "response", 0, ALL, NONE, ())]
FIELD = FieldDef("X", TypeRef("string"), ALL)


@pytest.mark.parametrize(
    ("field", "reason"),
    [
        (replace(FIELD, name="X_y"), "not a krammar name"),
        (replace(FIELD, default="a // b"), "no krammar spelling"),
        (replace(FIELD, default="a  b"), "no krammar spelling"),
        (replace(FIELD, default="f(x)"), "no krammar spelling"),
        (replace(FIELD, entity_type="a-b"), "not a krammar name"),
        (replace(FIELD, type=TypeRef("1Foo", True), fields=(FIELD,)), "not a krammar name"),
        (replace(FIELD, type=TypeRef("int32"), nullable_versions=ALL), "cannot be null"),
        (replace(FIELD, type=TypeRef("int8", True, True), nullable_versions=ALL), "never nullable"),
        (replace(FIELD, type=TypeRef("varint-string")), "nullable in exactly"),
        (replace(FIELD, versions=VersionRange(5, 40000)), "beyond int16"),
    ],
)
def test_what_krammar_cannot_say_is_refused(field, reason):
    request = replace(PAIR[0], fields=(field,))
    with pytest.raises(RenderError, match=reason):
        render_krammar([request, PAIR[1]])


def test_a_response_unlike_its_request_is_refused():
    with pytest.raises(RenderError, match="takes all of these from its request"):
        render_krammar([PAIR[0], replace(PAIR[1], valid_versions=VersionRange(0, 3))])
