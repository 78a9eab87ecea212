"""Command line of the campaign: ``frames`` and ``captures`` runs, ``repro`` and ``minimize``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import replay, report
from .findings import MUST_BE_ZERO
from .runner import Limits, MiB, print_progress, run
from .targets import CaptureTarget, FrameTarget


def _families(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    out = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        out[name.strip()] = float(weight or 1)
    return out


def _limits(args) -> Limits:
    return Limits(timeout_s=args.timeout, memory_bytes=args.memory_mib * MiB, grace_s=args.grace)


def _campaign(args) -> int:
    if args.kind == "frames":
        target = FrameTarget(families=_families(args.families), catalog=args.catalog)
    else:
        target = CaptureTarget(accounting=args.accounting, families=_families(args.families))
    indices = range(args.start, args.start + args.count)
    print(
        f"{args.kind}: {args.count} inputs from index {args.start}, seed {args.seed}, {args.jobs} job(s), "
        f"{args.timeout} s and {args.memory_mib} MiB per input",
        file=sys.stderr,
        flush=True,
    )
    result = run(
        target,
        args.seed,
        indices,
        jobs=args.jobs,
        limits=_limits(args),
        batch=args.batch,
        progress=None if args.quiet else print_progress,
        keep_per_signature=args.keep,
    )
    settings = {
        "timeout_s": args.timeout,
        "memory_mib": args.memory_mib,
        "jobs": args.jobs,
        "families": args.families,
        "catalog": getattr(args, "catalog", None),
    }
    if args.kind == "captures":
        settings["accounting"] = "on" if target.check_accounting is not None else "off (tests/accounting.py not found)"
    summary = report.summary(args.kind, args.seed, indices, result, settings)
    print(report.format_table(summary))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        saved = report.save_inputs(target, args.seed, result, out)
        (out / f"{args.kind}-summary.json").write_text(json.dumps(summary, indent=2))
        print(f"  {saved} failing inputs and {args.kind}-summary.json written under {out}")
    return 0 if summary["clean"] else 1


def _repro(args) -> int:
    status = 0
    for name in args.paths:
        path = Path(name)
        target, case, meta = replay.load(path)
        found = replay.outcomes(target, [case], _limits(args))[0]
        if args.in_process:
            target.warm()
            print(target.check(case))
        print(f"{path}: {meta.get('category')} {meta.get('signature')!r} saved; now: {sorted(found) or 'no finding'}")
        status |= any(c in MUST_BE_ZERO for c, _ in found)
    return status


def _minimize(args) -> int:
    for name in args.paths:
        path = Path(name)
        target, case, meta = replay.load(path)
        wanted = (meta["category"], meta["signature"])
        smaller = replay.minimize(target, case, wanted, _limits(args), budget=args.budget)
        out = replay.save_minimized(target, smaller, meta, path)
        print(f"{path}: {case.size} -> {smaller.size} bytes, {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/fuzz.py",
        description="Hostile inputs for decode_request / decode_response and read_capture, each run in a child "
        "process with a time and memory limit; failures are counted by signature and saved with --out.",
    )
    sub = parser.add_subparsers(dest="kind", required=True)

    def limits(p):
        p.add_argument("--timeout", type=float, default=10.0, help="seconds per input (default 10)")
        p.add_argument(
            "--memory-mib", type=int, default=512, help="memory per input over the worker's own (default 512)"
        )
        p.add_argument("--grace", type=float, default=10.0, help="seconds past the timeout before a worker is killed")

    for kind, help_text in (
        ("frames", "decode_request / decode_response on hostile frames"),
        ("captures", "read_capture on hostile capture files"),
    ):
        p = sub.add_parser(kind, help=help_text)
        p.add_argument("--count", type=int, default=10000)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--start", type=int, default=0, help="first input index (rerun one input: --start I --count 1)")
        p.add_argument("--jobs", type=int, default=1)
        p.add_argument("--out", help="directory for failing inputs and the summary JSON")
        p.add_argument("--keep", type=int, default=5, help="inputs kept per signature, smallest first (default 5)")
        p.add_argument("--batch", type=int, default=200 if kind == "frames" else 20, help="inputs per task")
        p.add_argument("--families", help="family weights, e.g. 'real=1,bomb=0' (default: the built-in mix)")
        p.add_argument("--quiet", action="store_true")
        limits(p)
        if kind == "frames":
            p.add_argument(
                "--catalog",
                choices=("full", "quick", "none"),
                default="full",
                help="fixed cases at the first indices: all of them (default), the quick part, none",
            )
        else:
            p.add_argument(
                "--accounting",
                choices=("auto", "on", "off"),
                default="auto",
                help="check byte accounting with tests/accounting.py (auto: when it exists)",
            )
    p = sub.add_parser("repro", help="run saved inputs again (each in a limited child)")
    p.add_argument("paths", nargs="+", help="<stem>.json files written by --out")
    p.add_argument("--in-process", action="store_true", help="also run here, without limits, to see the traceback")
    limits(p)
    p = sub.add_parser("minimize", help="shrink saved inputs while their finding stays the same")
    p.add_argument("paths", nargs="+")
    p.add_argument("--budget", type=int, default=3000, help="most candidates to try per input")
    limits(p)
    args = parser.parse_args(argv)
    if args.kind == "repro":
        return _repro(args)
    if args.kind == "minimize":
        return _minimize(args)
    return _campaign(args)
