"""Our VARIANT encoder against Spark's own reader (pyspark.sql.variant_utils), on any value."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.variant_utils import VariantUtils

from kafka_protocol_source.views.variant import VariantEncoder, to_variant

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=80),
    st.binary(max_size=40),
    st.floats(allow_nan=False),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=8), inner, max_size=6)),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_spark_reads_back_what_we_encode(value):
    encoded, metadata = to_variant(value)
    assert VariantUtils.to_python(encoded, metadata) == _expected(value)


def test_large_containers_use_wide_offsets_and_counts():
    value = {f"k{i}": list(range(i % 5)) for i in range(400)} | {"blob": b"x" * 70000}
    encoded, metadata = to_variant(value)
    assert VariantUtils.to_python(encoded, metadata) == value


def _expected(value):
    """What Spark gives back: the same value (binary stays bytes, -0.0 compares equal)."""
    if isinstance(value, float) and math.isinf(value):
        return value
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items()}
    return value


# One encoder for every example below, as on the Spark path: shapes, families and compiled
# encoders learned from earlier values must give the right bytes for later ones.
_SHARED = VariantEncoder()
_FIELD_NAMES = ("error_code", "name", "partitions", "records", "is_internal", "topic_id")
same_keys_objects = st.lists(
    st.fixed_dictionaries({k: values for k in _FIELD_NAMES}),
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(same_keys_objects, values), min_size=1, max_size=4))
def test_a_shared_encoder_reads_back_the_same_whatever_types_a_known_shape_holds(bodies):
    for body in bodies:
        encoded, metadata = _SHARED.encode(body)
        assert VariantUtils.to_python(encoded, metadata) == _expected(body)


def test_the_shapes_an_encoder_keeps_are_bounded():
    encoder = VariantEncoder(max_shapes=64)
    for i in range(300):  # objects whose keys are data: a new shape each time
        body = {"topics": {f"t{i}": 1, f"u{i}": [i]}}
        encoded, metadata = encoder.encode(body)
        assert VariantUtils.to_python(encoded, metadata) == body
    assert sum(len(keys.shapes) for keys in encoder.families.values()) <= 65


def test_a_family_whose_keys_are_data_starts_again_and_its_metadata_stays_small():
    encoder = VariantEncoder()
    for i in range(200):
        body = {"topics": {f"topic-{i}-{j}": j for j in range(50)}}
        encoded, metadata = encoder.encode(body)
        assert VariantUtils.to_python(encoded, metadata) == body
        assert len(metadata) < 40_000  # 2048 keys of ~13 bytes, not the 10,000 seen


def test_readers_of_one_process_share_what_the_encoder_learned():
    """A Python worker runs task after task; the second read of a capture compiles no shape."""
    from kafka_protocol_source.codec.decoder import decoder_for
    from kafka_protocol_source.spark.options import ReadOptions
    from kafka_protocol_source.spark.partition_reader import CapturePartition, PartitionReader
    from kafka_protocol_source.spark.source import default_schema
    from kafka_protocol_source.views.variant import process_encoder
    from kafka_protocol_source.views.variant_spec import body_encoders

    from .expected import TANSU_CONFLUENT

    options = ReadOptions.parse({"path": str(TANSU_CONFLUENT)})
    schema = default_schema(options)

    def read() -> list:
        batches = PartitionReader(options, schema).read(CapturePartition(str(TANSU_CONFLUENT)))
        return [row for batch in batches for row in batch.to_pylist()]

    def learned() -> tuple[int, int]:
        """Shapes the generic encoder learned, and message versions whose encoders were compiled."""
        return process_encoder().shapes_learned, len(body_encoders(decoder_for(None).registry).compiled())

    first = read()
    after_first = learned()
    assert after_first[1] > 0
    second = read()
    assert learned() == after_first
    assert [_read_back(r) for r in second] == [_read_back(r) for r in first]


def _read_back(row: dict) -> dict:
    """The row with its VARIANT bodies as values (their bytes depend on what was learned before)."""
    return {
        k: VariantUtils.to_python(v["value"], v["metadata"]) if k in ("request", "response") and v else v
        for k, v in row.items()
    }
