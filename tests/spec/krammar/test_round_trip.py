"""Round trips: any IR krammar can express renders to text that lowers back to the same IR, and
render -> parse -> render gives the same text (hypothesis, over generated messages)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source.spec.ir import FieldDef, MessageDef, StructDef, TypeRef
from kafka_protocol_source.spec.krammar import lower_document, parse_krammar, render_krammar
from kafka_protocol_source.spec.versions import NONE, OPEN_END, VersionRange

NAMES = ["Topic", "Topics", "Partition", "Partitions", "ErrorCode", "Name", "Value", "Records", "Length", "Id",
         "Brokers", "Host", "Port", "Rack", "Members", "Assignment", "Cursor", "Epoch", "Data", "Flags"]
SCALARS = ["bool", "int8", "int16", "uint16", "int32", "int64", "uint32", "float64", "varint", "varlong", "uuid",
           "string", "bytes", "records", "varint-string", "varint-bytes"]
NULLABLE = {"string", "bytes", "records"}
INTS = {"int8", "int16", "int32", "int64", "uint16", "uint32", "varint", "varlong"}
SHARED = ("SharedOne", "SharedTwo")


@st.composite
def ranges(draw, allow_none=False):
    if allow_none and draw(st.booleans()):
        return NONE
    low = draw(st.integers(0, 6))
    high = OPEN_END if draw(st.booleans()) else draw(st.integers(low, 9))
    return VersionRange(low, high)


@st.composite
def field_defs(draw, depth: int, shared: tuple[str, ...], earlier: list[FieldDef]):
    versions = draw(ranges())
    shape = draw(st.sampled_from(["scalar", "scalar", "array", "struct", "array-struct", "shared", "length"]
                                 if depth < 2 else ["scalar", "array", "length"]))
    nullable, fields, length_from, default = NONE, (), None, None
    maybe_nullable = st.one_of(st.just(NONE), st.just(versions), ranges())
    if shape == "length":
        ints = [f.name for f in earlier if f.type.name in INTS and not f.type.is_array and f.length_from is None]
        shape = "scalar" if not ints else shape
    if shape == "length":
        type_ref, length_from = TypeRef("bytes"), (draw(st.sampled_from(ints)), draw(st.integers(0, 99)))
    elif shape in ("struct", "array-struct"):
        inner = draw(struct_fields(depth + 1, shared))
        name = draw(st.sampled_from(["", "HintedName", "Other"])) or "Anon"
        type_ref, fields, nullable = TypeRef(name, shape == "array-struct"), inner, draw(maybe_nullable)
    elif shape == "shared" and shared:
        type_ref, nullable = TypeRef(draw(st.sampled_from(shared)), draw(st.booleans())), draw(maybe_nullable)
    elif shape == "array":
        element = draw(st.sampled_from([s for s in SCALARS if s not in ("varint-string", "varint-bytes")]))
        varint = draw(st.booleans())
        type_ref = TypeRef(element, True, varint)
        nullable = NONE if varint else draw(maybe_nullable)
    else:
        scalar = draw(st.sampled_from(SCALARS))
        type_ref = TypeRef(scalar)
        if scalar in ("varint-string", "varint-bytes"):
            nullable = versions
        elif scalar in NULLABLE:
            nullable = draw(maybe_nullable)
    if length_from is None:
        default = draw(st.one_of(st.none(), st.sampled_from(["-1", "null", "0x7fffffff", "false", "", "x.y"])))
    tag = draw(st.one_of(st.none(), st.integers(0, 40)))
    return FieldDef(
        name="", type=type_ref, versions=versions, nullable_versions=nullable,
        tagged_versions=NONE if tag is None else draw(st.one_of(st.just(versions), ranges(allow_none=True))),
        tag=tag, flexible_versions=draw(st.one_of(st.none(), ranges(allow_none=True))), default=default,
        map_key=draw(st.booleans()), entity_type=draw(st.sampled_from([None, "topicName", "brokerId"])),
        ignorable=draw(st.booleans()), zero_copy=draw(st.booleans()), fields=fields, length_from=length_from,
    )


@st.composite
def struct_fields(draw, depth: int, shared: tuple[str, ...]):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    fields: list[FieldDef] = []
    tags: set[int] = set()
    for name in names:
        field = draw(field_defs(depth, shared, fields))
        if field.tag is not None:
            if field.tag in tags:
                field = _replace(field, tag=None, tagged_versions=NONE)
            tags.add(field.tag)
        fields.append(_replace(field, name=name))
    return tuple(fields)


def _replace(field: FieldDef, **changes) -> FieldDef:
    from dataclasses import replace
    return replace(field, **changes)


@st.composite
def api_pairs(draw):
    shared_structs = tuple(StructDef(name, VersionRange(0, OPEN_END), draw(struct_fields(2, ())))
                           for name in SHARED[: draw(st.integers(0, 2))])
    names = tuple(s.name for s in shared_structs)
    key = draw(st.integers(0, 200))
    valid = draw(ranges())
    flexible = draw(st.one_of(st.just(NONE), st.builds(lambda n: VersionRange(n, OPEN_END), st.integers(0, 9))))
    owners = {s.name: draw(st.sampled_from([("request",), ("response",), ("request", "response")]))
              for s in shared_structs}
    common = {side: tuple(s for s in shared_structs if side in owners[s.name]) for side in ("request", "response")}
    request = MessageDef(
        "ThingRequest", "request", key, valid, flexible, draw(struct_fields(0, tuple(s.name for s in common["request"]))),
        common["request"], latest_version_unstable=draw(st.booleans()),
        deprecated_versions=draw(ranges(allow_none=True)),
        listeners=tuple(draw(st.lists(st.sampled_from(["broker", "controller", "zkBroker"]), unique=True))),
    )
    response = MessageDef("ThingResponse", "response", key, valid, flexible,
                          draw(struct_fields(0, tuple(s.name for s in common["response"]))), common["response"])
    data = MessageDef("ThingData", "data", None, draw(ranges()), flexible, draw(struct_fields(0, ())))
    del names
    return [request, response, data]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(api_pairs())
def test_generated_messages_survive_render_and_parse(messages):
    text = render_krammar(messages, ["generated"])
    lowered = lower_document(parse_krammar(text))
    assert lowered == {m.name: m for m in messages}, text
    assert render_krammar(lowered.values(), ["generated"]) == text
