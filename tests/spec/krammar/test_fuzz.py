"""Any text is either a valid definitions file or a KrammarError with a position: never another
exception. Mutations of the bundled file (hypothesis) probe every rule's neighbourhood."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_source.spec.krammar import KrammarError, lower_document, parse_krammar
from kafka_protocol_source.spec.registry import DEFAULT_SPECS

TEXT = (DEFAULT_SPECS / "kafka.krammar").read_text(encoding="utf-8")
SAMPLE = TEXT[: TEXT.index("\n\n", 12_000) + 1]  # whole definitions, shared structs and tags among them
ALPHABET = " :/=>[]-+,()\n\tvxAz019#"


@st.composite
def mutated(draw):
    text = SAMPLE
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate line", "drop line"]))
        if action == "insert":
            text = text[:at] + draw(st.text(ALPHABET, min_size=1, max_size=3)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 6)) :]
        else:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end + 1
            text = (
                text[:end] + text[start:end] + text[end:] if action == "duplicate line" else text[:start] + text[end:]
            )
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_files_parse_or_fail_with_a_position(text):
    try:
        lower_document(parse_krammar(text, "fuzz.krammar"))
    except KrammarError as e:
        lines = text.split("\n")
        assert 1 <= e.line <= len(lines) + 1 and e.column >= 1, e
        assert str(e).startswith(f"fuzz.krammar:{e.line}:{e.column}: ")
