"""Golden outputs: every sample capture still reads into exactly the exchanges recorded beside it.

``sample_captures/NAME.golden.jsonl`` holds one JSON object per exchange (see ``golden.py``). A
difference fails with the first differing exchange and field. The files change only when asked:
``KAFKA_WIRE_UPDATE_GOLDEN=1`` rewrites them (and skips the comparison, so the run says so).
"""

import base64
import json

import pytest

from .catalog import SAMPLES, exchanges, sample_names
from .golden import MAX_GOLDEN_BYTES, TRIM_BYTES, UPDATE_ENV, golden_path, jsonable, render_lines, updating

NAMES = sample_names()


def first_difference(want: list[str], got: list[str]) -> str:
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        if w != g:
            w, g = json.loads(w), json.loads(g)
            keys = sorted(k for k in w.keys() | g.keys() if w.get(k) != g.get(k))
            return f"exchange {i} ({g.get('api_name')} {g.get('correlation_id')}): fields {keys} differ"
    return f"{len(want)} exchanges recorded, {len(got)} now"


@pytest.mark.parametrize("name", NAMES)
def test_exchanges_match_the_golden_file(name):
    path = golden_path(name)
    got = render_lines(exchanges(name))
    if updating():
        path.write_text("".join(line + "\n" for line in got), encoding="utf-8")
        pytest.skip(f"{UPDATE_ENV} set: wrote {path.name}")
    assert path.exists(), f"no golden file {path.name}: run with {UPDATE_ENV}=1 to create it"
    want = path.read_text(encoding="utf-8").splitlines()
    assert want == got, first_difference(want, got)


@pytest.mark.parametrize("name", NAMES)
def test_golden_rendering_is_stable_and_small(name):
    first = render_lines(exchanges(name))
    assert first == render_lines(exchanges(name))
    assert sum(len(line) + 1 for line in first) <= MAX_GOLDEN_BYTES
    for line in first:
        assert json.dumps(json.loads(line), sort_keys=True, ensure_ascii=False) == line


def test_no_orphan_golden_files():
    assert {p.name for p in SAMPLES.glob("*.golden.jsonl")} <= {golden_path(n).name for n in NAMES}


def test_long_bytes_are_trimmed_with_a_length_marker_only_when_asked():
    value = bytes(range(200))
    assert jsonable({"v": value}) == {"v": {"$bytes": base64.b64encode(value).decode()}}
    trimmed = jsonable({1: [value]}, trim=TRIM_BYTES)
    assert trimmed["1"][0]["$length"] == 200 and len(base64.b64decode(trimmed["1"][0]["$bytes"])) == TRIM_BYTES
