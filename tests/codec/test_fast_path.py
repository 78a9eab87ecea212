"""The decoder's fast path (a plan per api key and version, the two compiled parses) gives what
its general path gives, for every frame of the sample captures, and leaves the rest to it."""

from __future__ import annotations

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.codec.decoder import Decoder, decoder_for
from kafka_protocol_source.codec.errors import DecodeError
from kafka_protocol_source.records import DEFAULT_MAX_DECOMPRESSED_BYTES

from ..samples.catalog import sample, sample_names


def _frames(name: str, monkeypatch) -> tuple[list, list]:
    """The (request and response) frames decoding the sample hands the decoder, with arguments."""
    requests, responses = [], []
    decode_request, decode_response = Decoder.decode_request, Decoder.decode_response

    def record_request(self, payload, **options):
        requests.append((payload, options))
        return decode_request(self, payload, **options)

    def record_response(self, payload, api_key, api_version, **options):
        responses.append((payload, api_key, api_version, options))
        return decode_response(self, payload, api_key, api_version, **options)

    with monkeypatch.context() as m:
        m.setattr(Decoder, "decode_request", record_request)
        m.setattr(Decoder, "decode_response", record_response)
        s = sample(name)
        list(read_capture(s.path, ports=(s.broker_port,)))
    return requests, responses


def _outcome(decode, *args, **options):
    """What a call returns, or the repr of what it raises (each path is to raise the same)."""
    try:
        return decode(*args, **options)
    except Exception as e:  # noqa: BLE001
        return repr(e)


@pytest.mark.parametrize("name", sample_names())
def test_every_frame_decodes_as_the_general_path_decodes_it(name, monkeypatch):
    d = decoder_for()
    requests, responses = _frames(name, monkeypatch)
    assert requests or responses
    for payload, options in requests:
        lenient = options.get("lenient", False)
        budget = options.get("max_decompressed_bytes", DEFAULT_MAX_DECOMPRESSED_BYTES)
        general = _outcome(d._decode_request, payload, options.get("protocol_type"), lenient, budget)
        assert _outcome(d.decode_request, payload, **options) == general
    for payload, api_key, api_version, options in responses:
        lenient = options.get("lenient", False)
        budget = options.get("max_decompressed_bytes", DEFAULT_MAX_DECOMPRESSED_BYTES)
        context = options.get("request"), options.get("protocol_type")
        general = _outcome(d._decode_response, payload, api_key, api_version, *context, lenient, budget)
        assert _outcome(d.decode_response, payload, api_key, api_version, **options) == general


def test_frames_the_fast_path_cannot_take_go_the_general_way(monkeypatch):
    d = decoder_for()
    requests, _ = _frames("tansu_confluent_kafka_all_codecs", monkeypatch)
    payload = requests[0][0]
    assert "trailing_bytes" not in d.decode_request(payload)
    padded = d.decode_request(payload + b"\x00\x00", lenient=True)  # bytes left over: said, not dropped
    assert padded["trailing_bytes"] == 2
    with pytest.raises(DecodeError, match="bytes left after"):
        d.decode_request(payload + b"\x00\x00")
    with pytest.raises(DecodeError, match="unknown api key"):
        d.decode_request(b"\x7f\xf0\x00\x00" + payload[4:])
    with pytest.raises(DecodeError, match="claimed length"):  # cut inside the header: where, said
        d.decode_request(payload[:10])
    with pytest.raises(DecodeError, match="too short"):
        d.decode_request(payload[:3])
    assert (0x7FF0, 0) not in d._request_plans  # only versions the registry has get a plan
