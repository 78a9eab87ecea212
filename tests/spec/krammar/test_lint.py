"""``python -m kafka_protocol_source.spec.krammar --lint FILE``: check your own definitions."""

from __future__ import annotations

from kafka_protocol_source.spec.krammar.__main__ import main
from kafka_protocol_source.spec.registry import DEFAULT_SPECS


def test_lint_says_what_a_good_file_defines(capsys):
    assert main(["--lint", str(DEFAULT_SPECS / "kafka.krammar")]) == 0
    out = capsys.readouterr().out
    assert "89 request/response pairs, 2 headers, 8 data messages" in out


def test_lint_prints_the_first_error_with_its_position(tmp_path, capsys):
    bad = tmp_path / "bad.krammar"
    bad.write_text("ARequest => key 0, max version 1\n  X: int8 \n\nAResponse =>\n  Y: int8\n")
    assert main(["--lint", str(bad)]) == 1
    assert capsys.readouterr().err.strip() == f"{bad}:2:10: lines cannot have trailing spaces"


def test_lint_of_a_missing_file_is_an_error_not_a_traceback(tmp_path, capsys):
    assert main(["--lint", str(tmp_path / "nope.krammar")]) == 1
    assert "nope.krammar" in capsys.readouterr().err
