"""Our VARIANT encoder against Spark's own reader (pyspark.sql.variant_utils), on any value."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.variant_utils import VariantUtils

from kafka_protocol_source.views.variant import to_variant

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
