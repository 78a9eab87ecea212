"""Saved inputs run again, and shrunk: ``repro`` and ``minimize``.

Owns `ReplayTarget` (a fixed list of cases behind the runner's target interface, so replays
get the same child process, time limit and memory limit as the campaign) and a greedy
minimizer: it removes chunks of bytes (frames, dumps, unparseable captures) or whole packets
(captures that still parse) as long as the same (category, signature) comes back.
Does not generate new inputs.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from . import pcapio
from .runner import Limits, run
from .targets import CaptureTarget, FrameTarget


class ReplayTarget:
    def __init__(self, inner, cases: list):
        self.inner = inner
        self.kind = inner.kind
        self.cases = cases

    def warm(self) -> None:
        self.inner.warm()

    def generate(self, seed: int, index: int):
        return self.cases[index]

    def check(self, case):
        return self.inner.check(case)

    def save(self, case, directory, stem):
        return self.inner.save(case, directory, stem)


def load(path: Path):
    """(target, case, meta) of a saved ``<stem>.json``."""
    meta = json.loads(path.read_text())
    stem = path.name[: -len(".json")]
    target = FrameTarget() if meta["kind"] == "frames" else CaptureTarget(accounting="auto")
    return target, target.load(meta, path.parent, stem), meta


def outcomes(target, cases: list, limits: Limits) -> list[set[tuple[str, str]]]:
    """The (category, signature) pairs each case gives, each run in a limited child."""
    result = run(
        ReplayTarget(target, cases),
        0,
        range(len(cases)),
        jobs=1,
        limits=limits,
        batch=len(cases) or 1,
        keep_per_signature=len(cases) or 1,
    )
    found: list[set] = [set() for _ in cases]
    for failure in result.failures:
        found[failure.index].add((failure.finding.category, failure.finding.signature))
    return found


def _shrink(items: list, rebuild, still_fails, budget: int) -> list:
    """Greedy chunk removal: try dropping [i, i+n) for falling n while the failure stays."""
    n = max(1, len(items) // 2)
    while n >= 1 and budget > 0:
        i = 0
        while i < len(items) and budget > 0:
            starts = list(range(i, len(items), n))[:64]
            candidates = [items[:s] + items[s + n :] for s in starts]
            budget -= len(candidates)
            verdicts = still_fails([rebuild(c) for c in candidates])
            hit = next((k for k, ok in enumerate(verdicts) if ok), None)
            if hit is None:
                i = starts[-1] + n
            else:
                items = candidates[hit]
                i = starts[hit]
        n //= 2
    return items


def minimize(target, case, wanted: tuple[str, str], limits: Limits, budget: int = 3000):
    """A smaller case that still gives ``wanted``."""

    def still_fails(cases):
        return [wanted in found for found in outcomes(target, cases, limits)]

    if target.kind == "frames":
        data = _shrink(list(case.payload), lambda b: replace(case, payload=bytes(b)), still_fails, budget)
        return replace(case, payload=bytes(data))
    if len(case.read) != 1:
        return case  # a session of several files: left as it is
    name = case.read[0]
    try:
        parsed = pcapio.read(case.files[name])
    except Exception:  # noqa: BLE001 - not a well-formed capture: shrink its bytes instead
        parsed = None
    if parsed is not None and parsed.packets and name.endswith((".pcap", ".pcapng")):

        def rebuild_packets(packets):
            return replace(case, files={**case.files, name: pcapio.write(parsed.with_packets(packets))})

        reference = rebuild_packets(parsed.packets)
        if still_fails([reference])[0]:
            packets = _shrink(list(parsed.packets), rebuild_packets, still_fails, budget)
            return rebuild_packets(packets)

    def rebuild_bytes(b):
        return replace(case, files={**case.files, name: bytes(b)})

    # Bytes one by one are too many for a capture: shrink in chunks of at least 16.
    data = case.files[name]
    chunks = [data[i : i + 16] for i in range(0, len(data), 16)]
    kept = _shrink(chunks, lambda cs: rebuild_bytes(b"".join(cs)), still_fails, budget)
    return rebuild_bytes(b"".join(kept))


def save_minimized(target, case, meta: dict, path: Path) -> Path:
    stem = path.name[: -len(".json")] + ".min"
    files = target.save(case, path.parent, stem)
    meta = {
        **meta,
        **case.meta(),
        "size": case.size,
        "files": [p.name for p in files],
        "minimized_from": path.name,
        "repro": f"python tools/fuzz.py repro {path.parent / (stem + '.json')}",
    }
    out = path.parent / f"{stem}.json"
    out.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str))
    return out
