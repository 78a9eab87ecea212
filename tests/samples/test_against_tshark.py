"""Cross-check the sample captures with tshark's Kafka dissector as the reference.

Every request tshark decodes is one of our exchanges (same connection, correlation id, API key,
version, client id and frame size), and every response tshark matched to a request is paired in
our output with that same request. tshark 4.0 knows Kafka 2.4-era versions: where it flags a
packet malformed, only the header fields it did decode are compared (all of them are header
fields here). tshark runs once per capture file per session (``catalog.tshark_pdus`` caches).
"""

from collections import defaultdict

import pytest

from .catalog import TSHARK, connection, exchanges, is_client_side, sample, sample_names, tshark_pdus

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
NAMES = sample_names()


def our_index(name):
    index = {}
    for e in exchanges(name):
        key = (connection(e), e.correlation_id)
        assert key not in index, f"two exchanges share {key}"
        index[key] = e
    return index


def pdu_connection(pdu, s):
    return (pdu.src, pdu.dst) if is_client_side(pdu, s) else (pdu.dst, pdu.src)


@pytest.mark.parametrize("name", NAMES)
def test_every_request_tshark_decodes_is_ours(name):
    s = sample(name)
    ours = our_index(name)
    requests = [p for p in tshark_pdus(name) if is_client_side(p, s)]
    assert requests
    mismatches = []
    for p in requests:
        e = ours.get((pdu_connection(p, s), p.correlation_id))
        if e is None:
            mismatches.append(("missing", p))
            continue
        got = (e.api_key, e.api_version, e.client_id or None, e.request_size)
        want = (p.api_key, p.api_version, p.client_id or None, p.length + 4)
        if got != want:
            mismatches.append((got, want, p))
        # tshark shows a PDU in the packet that completes it; ours records the packet it starts in
        if e.request_packet is not None and not e.request_packet + 1 <= p.frame:
            mismatches.append(("packet", e.request_packet, p))
    assert mismatches == []


@pytest.mark.parametrize("name", NAMES)
def test_every_response_tshark_pairs_is_paired_with_the_same_request(name):
    s = sample(name)
    ours = our_index(name)
    pdus = tshark_pdus(name)
    requests_in_frame = defaultdict(list)
    for p in pdus:
        if is_client_side(p, s):
            requests_in_frame[(p.stream, p.frame)].append(p)
    responses = [p for p in pdus if not is_client_side(p, s)]
    paired = [p for p in responses if p.request_frame is not None]
    assert paired
    mismatches = []
    for p in paired:
        [request] = [r for r in requests_in_frame[(p.stream, p.request_frame)] if r.correlation_id == p.correlation_id]
        e = ours.get((pdu_connection(request, s), request.correlation_id))
        if e is None or e.response is None or e.response_size != p.length + 4 or e.api_key != p.api_key:
            mismatches.append((p, e and (e.status, e.api_name, e.response_size)))
        elif p.api_version is not None and p.api_version != e.api_version:
            mismatches.append(("version", p, e.api_version))
    assert mismatches == []
    # Responses tshark could not pair (it did not register a request it failed to dissect) are
    # still answers to a request of ours with that correlation id, of the same size.
    for p in responses:
        if p.request_frame is None:
            e = ours[(pdu_connection(p, s), p.correlation_id)]
            assert e.response is not None and e.response_size == p.length + 4


@pytest.mark.parametrize("name", NAMES)
def test_connections_map_one_to_one_onto_tcp_streams(name):
    s = sample(name)
    stream_to_ours = defaultdict(set)
    for p in tshark_pdus(name):
        stream_to_ours[p.stream].add(pdu_connection(p, s))
    assert all(len(v) == 1 for v in stream_to_ours.values())
    theirs = {next(iter(v)) for v in stream_to_ours.values()}
    assert theirs == {connection(e) for e in exchanges(name)}
    assert len(theirs) == len(stream_to_ours)
