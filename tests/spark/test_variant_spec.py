"""Encoders compiled from the spec give the values of the generic encoder, whatever a body holds."""

import copy
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.variant_utils import VariantUtils

from kafka_protocol_source.codec.decoder import decoder_for
from kafka_protocol_source.pipeline import read_capture
from kafka_protocol_source.spec.api_keys import API_VERSIONS
from kafka_protocol_source.views.variant import VariantEncoder, process_encoder
from kafka_protocol_source.views.variant_spec import BodyEncoders, body_encoders
from tests.conftest import SAMPLES

from .expected import TANSU_CONFLUENT
from .test_variant import _expected, values


@cache
def _bodies() -> list:
    """(body, api key, version, is a request) of every sample exchange."""
    found = []
    for path in sorted(SAMPLES.glob("*.pcap*")):
        for ex in read_capture(str(path)):
            found += [(b, ex.api_key, ex.api_version, b is ex.request) for b in (ex.request, ex.response) if b]
    return found


def _encoders() -> BodyEncoders:
    return BodyEncoders(decoder_for(None).registry)


def _spec(encoders: BodyEncoders, api_key, version, request: bool):
    return encoders.request(api_key, version) if request else encoders.response(api_key, version)


def test_every_sample_body_reads_back_as_it_was_decoded():
    encoders, encoder = _encoders(), VariantEncoder()
    bodies = _bodies()
    assert len({(k, v, r) for _, k, v, r in bodies}) > 60  # message versions
    for body, api_key, version, request in bodies:
        spec = _spec(encoders, api_key, version, request)
        assert spec is not None
        assert VariantUtils.to_python(*encoder.encode(body, spec)) == _expected(body)


def _holders(value, found):
    """Every dict and list in ``value``, with the keys (indexes) of what it holds."""
    if isinstance(value, dict):
        found += [(value, k) for k in value]
        for v in value.values():
            _holders(v, found)
    elif isinstance(value, list):
        found += [(value, i) for i in range(len(value))]
        for v in value:
            _holders(v, found)
    return found


# One set of encoders for every example, as in a Spark worker: what earlier bodies taught (keys
# the generic walk added to a message version's dictionary) must not spoil later ones.
_SHARED = (_encoders(), VariantEncoder())


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_body_unlike_its_spec_reads_back_as_it_is(data):
    """A sample body with values swapped for any others (nulls, ints too wide for the field,
    strings, lists, objects), keys dropped or added: what lenient decoding, fallbacks and the
    decoder's additions make of a body, and worse."""
    body, api_key, version, request = data.draw(st.sampled_from(_bodies()))
    body = copy.deepcopy(body)
    for _ in range(data.draw(st.integers(1, 4))):
        holders = _holders(body, [])
        if not holders:
            break
        holder, key = data.draw(st.sampled_from(holders))
        change = data.draw(st.sampled_from(["set", "drop", "add"]))
        if change == "set":
            holder[key] = data.draw(values)
        elif change == "drop" and isinstance(holder, dict):
            del holder[key]
        elif change == "add" and isinstance(holder, dict):
            holder[data.draw(st.text(max_size=8))] = data.draw(values)
    encoders, encoder = _SHARED
    spec = _spec(encoders, api_key, version, request)
    assert VariantUtils.to_python(*encoder.encode(body, spec)) == _expected(body)


def test_the_keys_a_message_version_learns_from_unlike_bodies_are_bounded():
    encoders, encoder = _encoders(), VariantEncoder()
    body, api_key, version, request = next(b for b in _bodies() if b[1] == API_VERSIONS and not b[3])
    spec = _spec(encoders, api_key, version, request)
    for i in range(300):
        odd = copy.deepcopy(body)
        odd["api_keys"][0] |= {f"extra-{i}-{j}": j for j in range(20)}  # keys made of data
        encoded, metadata = encoder.encode(odd, spec)
        assert VariantUtils.to_python(encoded, metadata) == odd
        assert len(metadata) < 60_000  # about 2048 keys, not the 6,000 seen
    assert VariantUtils.to_python(*encoder.encode(body, spec)) == body


def test_an_object_of_int16_fields_has_one_size_whatever_their_values():
    encoders, encoder = _encoders(), VariantEncoder()
    body, api_key, version, request = next(b for b in _bodies() if b[1] == API_VERSIONS and not b[3])
    spec = _spec(encoders, api_key, version, request)
    sizes = set()
    for value in (0, 1, -1, 127, 128, 32767, -32768):
        ranges = copy.deepcopy(body)
        ranges["error_code"] = value
        for entry in ranges["api_keys"]:
            entry.update(api_key=value, min_version=value, max_version=value)
        encoded, metadata = encoder.encode(ranges, spec)
        assert VariantUtils.to_python(encoded, metadata) == ranges
        sizes.add(len(encoded))
    assert len(sizes) == 1


def test_the_exchanges_view_encodes_each_body_with_its_message_versions_encoder():
    """The Arrow batches a Spark task builds hold, for each row, the bytes that the encoder of its
    api key and version (request or response) gives, which the generic walk does not give."""
    from kafka_protocol_source.spark.options import ReadOptions
    from kafka_protocol_source.spark.partition_reader import CapturePartition, PartitionReader
    from kafka_protocol_source.spark.source import default_schema

    options = ReadOptions.parse({"path": str(TANSU_CONFLUENT)})
    batches = PartitionReader(options, default_schema(options)).read(CapturePartition(str(TANSU_CONFLUENT)))
    rows = [row for batch in batches for row in batch.to_pylist()]
    exchanges = list(read_capture(str(TANSU_CONFLUENT)))
    assert [r["correlation_id"] for r in rows] == [ex.correlation_id for ex in exchanges]
    # The encoders the reader shares with the process: the ids of keys an encoder learned outside
    # the spec depend on what it met before (other tests', in this process), so a fresh encoder's
    # bytes may number them otherwise. Its key dictionary grows as it learns (a later row's
    # metadata holds more keys), so each row's metadata is compared by what it reads as.
    encoders, encoder, generic = body_encoders(decoder_for(None).registry), process_encoder(), VariantEncoder()
    unlike_generic = 0
    for row, ex in zip(rows, exchanges, strict=True):
        for column, body, request in (("request", ex.request, True), ("response", ex.response, False)):
            if body is None:
                continue
            value, metadata = encoder.encode(body, _spec(encoders, ex.api_key, ex.api_version, request))
            cell = row[column]
            assert cell["value"] == value
            assert VariantUtils.to_python(cell["value"], cell["metadata"]) == VariantUtils.to_python(value, metadata)
            unlike_generic += generic.encode(body)[0] != value
    assert unlike_generic > 0


@settings(max_examples=200, deadline=None)
@given(
    count=st.sampled_from([0, 1, 14, 15, 16, 300, 3641, 3700]),
    odd=st.sampled_from([None, "extra key", "missing key", "not a dict", "too wide", "not an int", "null"]),
    where=st.integers(0, 3700),
)
def test_an_array_of_fixed_width_structs_reads_back_whatever_it_holds(count, odd, where):
    """ApiVersions' api key ranges (int16 fields only) are encoded a whole array at a time, with
    headers known from the count: 14 ranges fit one-byte offsets and 15 do not, 3641 fit two-byte
    offsets and 3642 do not. One odd element sends the whole array element by element."""
    encoders, encoder = _SHARED
    body, api_key, version, request = next(b for b in _bodies() if b[1] == API_VERSIONS and not b[3])
    ranges = copy.deepcopy(body)
    ranges["api_keys"] = [{"api_key": i % 70, "min_version": 0, "max_version": i % 300 - 20} for i in range(count)]
    if odd is not None and count:
        entry = ranges["api_keys"][where % count]
        if odd == "extra key":
            entry["unknown_tag_7"] = b"\x01"
        elif odd == "missing key":
            del entry["min_version"]
        elif odd == "not a dict":
            ranges["api_keys"][where % count] = [1, 2, 3]
        elif odd == "too wide":
            entry["max_version"] = 1 << 20
        elif odd == "not an int":
            entry["api_key"] = "18"
        else:
            entry["min_version"] = None
    encoded, metadata = encoder.encode(ranges, _spec(encoders, api_key, version, request))
    assert VariantUtils.to_python(encoded, metadata) == _expected(ranges)
