"""A stream dump the capture cut inside its first frame: by content alone no dump (its frame does
not fit the file), so its row says what it begins as and how to have it read."""

from __future__ import annotations

import struct

from kafka_protocol_source import read_capture


def _read(path, data: bytes) -> list:
    path.write_bytes(data)
    return list(read_capture(path))


def test_a_dump_cut_inside_its_first_frame_says_so_and_reads_under_a_tcpflow_name(samples, tmp_path):
    """A raw save of the broker's side ("Follow TCP stream"), the capture stopped inside its
    first response: its frames cannot fit the file, so it is no dump by content alone, and the
    row said only that it is not a capture (found by review: rev20 F5). It says what the file
    begins as, and how to have it read; under a tcpflow name it reads as the cut frame."""
    broker_side = "127.000.000.001.33325-127.000.000.001.46778"
    responses = (samples / "tcpflow_tansu_confluent_kafka_all_codecs" / broker_side).read_bytes()
    (first,) = struct.unpack_from(">i", responses)
    cut = responses[: 4 + first // 2]
    [row] = _read(tmp_path / "responses.bin", cut)
    assert row.status == "capture_error" and f"first frame claims {first} bytes" in row.error
    assert "tcpflow" in row.error
    [row] = _read(tmp_path / broker_side, cut)
    assert row.status == "gap" and f"({len(cut)} of {first + 4} bytes present)" in row.error
