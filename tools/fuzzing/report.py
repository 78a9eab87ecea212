"""The campaign's results on disk and on screen: summary JSON, saved inputs, a text table.

Owns the layout of ``--out``::

    OUT/<kind>-summary.json                      figures, signatures with counts, the command
    OUT/<kind>/<signature slug>/<stem>.json      one failing input: seed, index, finding, notes
    OUT/<kind>/<signature slug>/<stem>.bin       ... its bytes (frames), or <stem>/ (capture files)

Inputs are written again from (seed, index), so workers never ship bytes back. Does not run
anything.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

from .findings import CATEGORIES, MUST_BE_ZERO
from .runner import Result


def slug(signature: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", signature).strip("_")[:120] or "unnamed"


def command_line() -> str:
    return " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])


def summary(kind: str, seed: int, indices: range, result: Result, settings: dict) -> dict:
    signatures = [
        {
            "category": c,
            "signature": s,
            "inputs": n,
            "smallest": sorted(
                (f.size, f.index) for f in result.failures if (f.finding.category, f.finding.signature) == (c, s)
            )[:1],
        }
        for (c, s), n in sorted(result.findings.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1]))
    ]
    for entry in signatures:
        smallest = entry.pop("smallest")
        entry["smallest_index"], entry["smallest_size"] = (smallest[0][1], smallest[0][0]) if smallest else (None, None)
    counts = result.counts()
    return {
        "kind": kind,
        "seed": seed,
        "first_index": indices.start,
        "inputs": result.inputs,
        "seconds": round(result.seconds, 1),
        "counts": counts,
        "clean": all(counts[c] == 0 for c in MUST_BE_ZERO),
        "settings": settings,
        "signatures": signatures,
        "command": command_line(),
    }


def save_inputs(target, seed: int, result: Result, out: Path) -> int:
    """Write every kept failing input under ``out/<kind>/<signature>/``; returns how many."""
    saved = 0
    for failure in sorted(result.failures, key=lambda f: (f.finding.category, f.finding.signature, f.size, f.index)):
        folder = out / target.kind / slug(f"{failure.finding.category} {failure.finding.signature}")
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"seed{seed}-{failure.index}"
        try:
            case = target.generate(seed, failure.index)
        except Exception:  # noqa: BLE001 - a harness finding: there is no input to save
            continue
        files = target.save(case, folder, stem)
        meta = {
            **case.meta(),
            "kind": target.kind,
            "seed": seed,
            "index": failure.index,
            "size": case.size,
            "category": failure.finding.category,
            "signature": failure.finding.signature,
            "detail": failure.finding.detail,
            "files": [p.name for p in files],
            "rerun": f"python tools/fuzz.py {target.kind} --seed {seed} --start {failure.index} --count 1",
            "repro": f"python tools/fuzz.py repro {folder / (stem + '.json')}",
        }
        (folder / f"{stem}.json").write_text(json.dumps(meta, indent=2, sort_keys=True, default=str))
        saved += 1
    return saved


def format_table(report: dict) -> str:
    lines = [f"{report['kind']}: {report['inputs']} inputs in {report['seconds']} s (seed {report['seed']})"]
    lines.append("  " + "  ".join(f"{c}={report['counts'][c]}" for c in CATEGORIES))
    for entry in report["signatures"]:
        lines.append(
            f"  {entry['inputs']:>8}  {entry['category']:<10} {entry['signature']}"
            f"  (smallest: index {entry['smallest_index']}, {entry['smallest_size']} bytes)"
        )
    lines.append(
        "  clean"
        if report["clean"]
        else "  NOT CLEAN: " + ", ".join(f"{c}={report['counts'][c]}" for c in MUST_BE_ZERO if report["counts"][c])
    )
    return "\n".join(lines)
