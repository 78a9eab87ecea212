"""Render a spec directory as one krammar file: ``python -m kafka_protocol_source.spec.krammar``.

With no arguments, renders the bundled ``specs/`` into ``specs/kafka.krammar`` (what
``tests/spec/krammar/test_differential.py`` checks is current); ``--check`` only compares.
``--lint FILE`` checks a krammar file of your own: what it defines, or its first error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..registry import DEFAULT_SPECS, SpecRegistry
from .lower import lower_document, lower_shared_structs
from .parser import parse_krammar
from .render import render_krammar
from .syntax import KrammarError

HEADER = (
    "Kafka message definitions in krammar, the grammar documented in specs/README.md.",
    "Generated from the JSON files beside it by `python -m kafka_protocol_source.spec.krammar`;",
    "edit those (or the importer), not this file.",
)


def render_directory(directory: Path) -> str:
    return render_krammar(SpecRegistry.from_directory(directory).messages.values(), HEADER)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_protocol_source.spec.krammar", description=__doc__)
    parser.add_argument("specs", nargs="?", type=Path, default=DEFAULT_SPECS, help="directory of JSON definitions")
    parser.add_argument("--out", type=Path, help="file to write (default: SPECS/kafka.krammar)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not what rendering gives")
    parser.add_argument("--lint", type=Path, metavar="FILE", help="check a krammar file and say what it defines")
    args = parser.parse_args(argv)
    if args.lint:
        return lint(args.lint)
    out = args.out or args.specs / "kafka.krammar"
    text = render_directory(args.specs)
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else None
        if current != text:
            print(f"{out} is out of date: run python -m kafka_protocol_source.spec.krammar", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({text.count(chr(10))} lines)")
    return 0


def lint(path: Path) -> int:
    try:
        document = parse_krammar(path.read_text(encoding="utf-8"), str(path))
        messages = lower_document(document)
        shared = lower_shared_structs(document)
    except (OSError, KrammarError) as e:
        print(e, file=sys.stderr)
        return 1
    kinds = [m.kind for m in messages.values()]
    print(
        f"{path}: {kinds.count('request')} request/response pairs, {kinds.count('header')} headers, "
        f"{kinds.count('data')} data messages, {len(shared)} shared structs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
