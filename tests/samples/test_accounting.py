"""Every Kafka frame in every sample capture is accounted for, and only explained ones are not ok.

Counts request and response frames in our exchanges and compares them with tshark's Kafka PDU
counts for the same traffic (the reference dissector, tshark 4.0). Then checks statuses: the two
kinds of non-ok exchange the sample sessions really produce are allowed, with their reason checked;
anything else must pair as ``ok``.
"""

from collections import Counter

import pytest

from kafka_protocol_source.framing.model import MALFORMED, OK, REQUEST_MISSING, SASL, UNANSWERED

from .catalog import TSHARK, connection, exchanges, is_client_side, sample, sample_names, tshark_pdus

NAMES = sample_names()


def frame_counts(exs) -> tuple[int, int]:
    """(request frames, response frames) our exchanges hold."""
    requests = responses = 0
    for e in exs:
        if e.request is not None or (e.status in (MALFORMED, SASL) and e.raw_request is not None):
            requests += 1
        else:  # a response alone (request_missing) carries no request frame
            assert e.status in (REQUEST_MISSING, SASL) and e.request_size is None, e
        if e.response is not None or e.raw_response is not None:
            responses += 1
    return requests, responses


def tshark_counts(name: str) -> tuple[int, int]:
    s = sample(name)
    pdus = tshark_pdus(name)
    requests = [p for p in pdus if is_client_side(p, s)]
    # tshark names a PDU a request only when it reads the request header; the direction decides.
    assert all(p.is_request for p in requests)
    return len(requests), len(pdus) - len(requests)


def test_every_sample_capture_is_covered():
    kinds = {sample(n).path.suffix if sample(n).path.suffix in (".pcap", ".pcapng") else "dump" for n in NAMES}
    assert {".pcap", ".pcapng", "dump"} <= kinds
    assert any("nano" in n for n in NAMES) and any("sll2" in n for n in NAMES)
    assert len(NAMES) == 10


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
@pytest.mark.parametrize("name", NAMES)
def test_frame_counts_match_tshark(name):
    ours = frame_counts(exchanges(name))
    assert ours == tshark_counts(name)
    assert ours[0] > 0 and ours[1] > 0


def _explained(e, broker: str, last_on_connection: bool) -> str | None:
    """Why a non-ok exchange is expected in these sessions, or None if it is not."""
    if (
        e.status == MALFORMED
        and broker == "mock"
        and e.response is not None
        and e.request is not None
        and "bytes left after the response body" in (e.error or "")
        and ((e.api_name == "ApiVersions" and e.api_version >= 3) or (e.api_name == "Metadata" and e.api_version == 13))
    ):
        # librdkafka's mock cluster appends bytes the spec does not account for; the body is kept.
        return "mock cluster: extra bytes after an ApiVersions v3+ / Metadata v13 response"
    if e.status == UNANSWERED and e.api_name == "Fetch" and last_on_connection and e.response is None:
        return "a consumer's long-poll Fetch still waiting when the capture stopped"
    return None


@pytest.mark.parametrize("name", NAMES)
def test_only_explained_exchanges_are_not_ok(name):
    exs = exchanges(name)
    broker = sample(name).manifest["broker"]["name"]
    last = {}  # the exchange whose request came last on each connection
    for e in sorted(exs, key=lambda x: x.stream_offset if x.stream_offset is not None else -1):
        last[connection(e)] = e
    unexplained = []
    for e in exs:
        if e.status == OK:
            assert e.request is not None and e.response is not None and e.error is None
            assert e.raw_request is None and e.raw_response is None
            continue
        reason = _explained(e, broker, last.get(connection(e)) is e)
        if reason is None:
            unexplained.append((e.status, e.api_name, e.api_version, e.correlation_id, e.error))
    assert unexplained == []
    # the malformed-with-body exchanges keep the raw response next to the decoded body
    for e in exs:
        if e.status == MALFORMED:
            assert e.raw_response is not None and e.response is not None


def test_the_explained_cases_do_occur():
    """Guard the allowances above: they describe real traffic in these captures, not a blanket pass."""
    statuses = Counter((n, e.status) for n in NAMES for e in exchanges(n))
    assert statuses[("mock_confluent_kafka_all_codecs_any_sll2", MALFORMED)] > 0
    assert sum(v for (n, st), v in statuses.items() if st == UNANSWERED) >= 1
    assert {st for (_, st) in statuses} <= {OK, MALFORMED, UNANSWERED}


@pytest.mark.parametrize("name", NAMES)
def test_correlation_ids_are_unique_per_connection(name):
    """The other sample tests key exchanges by (connection, correlation id); prove that is sound."""
    keys = Counter((connection(e), e.correlation_id) for e in exchanges(name))
    assert [k for k, n in keys.items() if n > 1] == []


@pytest.mark.parametrize("name", [n for n in NAMES if sample(n).path.suffix in (".pcap", ".pcapng")])
@pytest.mark.parametrize("with_ports", [True, False])
def test_every_captured_payload_byte_is_in_exactly_one_row(name, with_ports):
    from tests.accounting import captured_bytes, check_accounting

    s = sample(name)
    assert captured_bytes(s.path)  # the check has bytes to account for
    assert check_accounting(s.path, ports=[s.broker_port] if with_ports else None) == []
