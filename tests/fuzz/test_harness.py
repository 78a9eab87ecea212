"""The campaign's runner tells crashes, hangs, memory blow-ups and dead workers apart.

A stand-in target whose inputs misbehave on purpose (by index) checks that each way of going
wrong is charged to the right input and category, that workers are replaced after a hang, an
out-of-memory or a death, and that every input is counted exactly once.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from tools.fuzzing.capture_cases import case as capture_case
from tools.fuzzing.findings import CRASH, HANG, HARNESS, MEMORY, Finding
from tools.fuzzing.frame_cases import case as frame_case
from tools.fuzzing.runner import Limits, MiB, run

BEHAVIOUR = {
    3: "crash",
    5: "hang",
    8: "memory_error",
    9: "memory_rss",
    11: "die",
    13: "stuck_in_c",
    17: "bad_generator",
    19: "finding",
}
BOUND = 256 * MiB


@dataclass(frozen=True)
class _Case:
    index: int

    @property
    def size(self) -> int:
        return self.index

    def meta(self) -> dict:
        return {"index": self.index}


class _Misbehaving:
    kind = "test"

    def warm(self) -> None:
        pass

    def generate(self, seed: int, index: int) -> _Case:
        if BEHAVIOUR.get(index) == "bad_generator":
            raise ValueError("no such input")
        return _Case(index)

    def check(self, case: _Case) -> list[Finding]:
        what = BEHAVIOUR.get(case.index)
        if what == "crash":
            raise KeyError("boom")
        if what == "hang":
            while True:
                pass
        if what == "memory_error":  # past the hard cap (twice the bound): MemoryError where it is asked for
            bytearray(4 * BOUND)
        if what == "memory_rss":  # past the bound, under the cap: no error, only a high peak RSS
            touched = b"\x01" * (BOUND + 64 * MiB)  # written, so resident (bytearray(n) would not be)
            del touched
        if what == "die":
            os.kill(os.getpid(), signal.SIGSEGV)
        if what == "stuck_in_c":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # as a long C call would
            time.sleep(60)
        if what == "finding":
            return [Finding("accounting", "a reported finding")]
        return []


def test_each_failure_is_charged_to_its_input_and_every_input_is_counted_once():
    limits = Limits(timeout_s=2.0, memory_bytes=BOUND, grace_s=2.0)
    result = run(_Misbehaving(), 0, range(25), jobs=2, limits=limits, batch=4)
    by_index = {}
    for failure in result.failures:
        by_index.setdefault(failure.index, set()).add(failure.finding.category)
    assert result.inputs == 25
    assert by_index == {
        3: {CRASH},
        5: {HANG},
        8: {MEMORY},
        9: {MEMORY},
        11: {CRASH},
        13: {HANG},
        17: {HARNESS},
        19: {"accounting"},
    }
    signatures = {f.index: f.finding.signature for f in result.failures}
    assert signatures[3].startswith("KeyError")
    assert signatures[8].startswith("MemoryError")
    assert signatures[9] == "peak RSS over the bound"
    assert signatures[11] == "worker died (SIGSEGV)"
    assert signatures[13].startswith("hang (killed")


def test_inputs_are_a_function_of_seed_and_index():
    assert frame_case(5, 4000) == frame_case(5, 4000)
    assert frame_case(5, 4000) != frame_case(6, 4000)
    assert capture_case(5, 7) == capture_case(5, 7)
    assert capture_case(5, 7) != capture_case(5, 8)
