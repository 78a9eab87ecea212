"""A fast, fixed slice of the hostile-input campaign (``tools/fuzz.py``) as part of the suite.

Frames: the quick catalog (an empty and a random body for every api key and version in both
directions, nested envelopes and legacy wrappers, one compression bomb per codec and one over
many partitions) and then random cases; captures: random cases of every family. Same code,
same child processes and limits as the campaign; a failure lists the signatures with the
smallest input for each, which ``python tools/fuzz.py <kind> --seed S --start I --count 1``
runs again alone.
"""

from __future__ import annotations

from tools.fuzzing.findings import HARNESS, MUST_BE_ZERO
from tools.fuzzing.frame_cases import quick_catalog
from tools.fuzzing.runner import Limits, MiB, run
from tools.fuzzing.targets import CaptureTarget, FrameTarget

SEED = 11
FRAMES = 2000
CAPTURES = 60
LIMITS = Limits(timeout_s=10.0, memory_bytes=512 * MiB, grace_s=10.0)


def _problems(result) -> list[str]:
    smallest = {}
    for f in result.failures:
        key = (f.finding.category, f.finding.signature)
        smallest[key] = min(smallest.get(key, (f.size, f.index)), (f.size, f.index))
    return [
        f"{count} x {category}: {signature} (smallest: index {smallest[(category, signature)][1]})"
        for (category, signature), count in sorted(result.findings.items())
        if category in MUST_BE_ZERO or category == HARNESS
    ]


def test_hostile_frames_only_ever_give_decode_errors():
    assert len(quick_catalog()) < FRAMES  # the random part is not empty
    result = run(FrameTarget(catalog="quick"), SEED, range(FRAMES), jobs=1, limits=LIMITS)
    assert result.inputs == FRAMES
    problems = _problems(result)
    assert not problems, "\n".join(problems)


def test_hostile_captures_give_rows_and_account_for_every_byte():
    result = run(CaptureTarget(accounting="auto"), SEED, range(CAPTURES), jobs=1, limits=LIMITS, batch=20)
    assert result.inputs == CAPTURES
    problems = _problems(result)
    assert not problems, "\n".join(problems)
