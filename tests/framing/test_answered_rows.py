"""An answered exchange's row built by ``exchange_build.answered`` (the usual row, built without
the general cases) is the row ``build_exchange`` builds for it, for every such exchange of the
sample captures, read whole and read as rotated pieces (rows of a later file)."""

from __future__ import annotations

import pytest

from kafka_protocol_source import read_capture
from kafka_protocol_source.framing import pairing
from kafka_protocol_source.framing.exchange_build import build_exchange
from kafka_protocol_source.framing.model import OK

from ..cuts import pieces, segments_of
from ..samples.catalog import sample, sample_names


def _checked(calls: list):
    answered = pairing.answered

    def both(ctx, ids, frame, decoded, response_frame, response, completed_at):
        fast = answered(ctx, ids, frame, decoded, response_frame, response, completed_at)
        general = build_exchange(
            ctx,
            ids,
            False,
            OK,
            frame,
            decoded,
            response_frame=response_frame,
            response=response,
            completed_at=completed_at,
        )
        calls.append((fast, general))  # compared after the read: read_capture turns a raise into a row
        return fast

    return both


def _same(rows: list, calls: list) -> None:
    assert [fast for fast, _ in calls] == [general for _, general in calls]
    assert [r for r in rows if r.status == OK] == [fast for fast, _ in calls]  # every ok row went through it


@pytest.mark.parametrize("name", sample_names())
def test_answered_rows_are_the_general_rows(name, monkeypatch):
    s = sample(name)
    calls: list = []
    monkeypatch.setattr(pairing, "answered", _checked(calls))
    rows = list(read_capture(s.path, ports=(s.broker_port,)))
    _same(rows, calls)


def test_answered_rows_of_rotated_files(tmp_path, monkeypatch):
    s = sample("tansu_confluent_kafka_all_codecs")
    files = [cut.write(tmp_path / f"piece{i}.pcap") for i, cut in enumerate(pieces(segments_of(s.path), 3))]
    calls: list = []
    monkeypatch.setattr(pairing, "answered", _checked(calls))
    rows = list(read_capture([str(f) for f in files], ports=(s.broker_port,)))
    _same(rows, calls)
    assert {fast.capture_file for fast, _ in calls} == {str(f) for f in files}
