"""Import upstream Kafka message definitions into the project's ``specs/``.

    python -m kafka_protocol_source.spec.importer NEWEST_DIR [OLDER_DIR ...] --out specs/

Sources are listed newest first; each may be written ``LABEL=DIR`` (default label: the
``Commit:`` line of the directory's SOURCE.txt, else the directory name). Every version of every
message is taken from the newest source that defines it. An older source only contributes the
versions the newer ones dropped (Kafka 4.0 removed Produce v0-2, for instance), and only after
checking that the newer definition, read at those versions, lays out exactly what the older one
does; otherwise the import stops and says which message and versions disagree.

What is written is facts only: names, types, versions, nullable/tagged/flexible versions, tags,
defaults, map keys, entity types and the like, with no ``about`` prose and no comments, plus
``versionSources`` recording which source each version range came from.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .json_frontend import lower_message, read_json
from .resolve import resolve
from .versions import VersionRange

_PROSE = {"about"}


def strip_prose(value):
    if isinstance(value, dict):
        return {k: strip_prose(v) for k, v in value.items() if k not in _PROSE}
    if isinstance(value, list):
        return [strip_prose(v) for v in value]
    return value


def source_label(directory: Path) -> str:
    source = directory / "SOURCE.txt"
    if source.exists():
        text = source.read_text(encoding="utf-8")
        commit = re.search(r"^Commit:\s*(\S+)", text, re.M)
        repo = re.search(r"^Source repository:\s*(\S+)", text, re.M)
        if commit:
            return f"{repo.group(1) if repo else 'apache/kafka'}@{commit.group(1)}"
        first = text.strip().splitlines()[0] if text.strip() else ""
        if first:
            return first[:120]
    return directory.name


class ImportConflict(ValueError):
    pass


def merge(definitions: list[tuple[str, dict]]) -> dict:
    """Merge one message's definitions, newest first, into one raw definition."""
    label, base = definitions[0]
    merged = strip_prose(base)
    base_def = lower_message(merged)
    covered = base_def.valid_versions
    sources = [(covered, label)]
    for older_label, older in definitions[1:]:
        older_def = lower_message(older)
        extra = [v for v in older_def.valid_versions.versions() if v not in covered]
        if not extra:
            continue
        low, high = min(extra), max(extra)
        if list(range(low, high + 1)) != extra or not (high + 1 == covered.low or low - 1 == covered.high):
            raise ImportConflict(
                f"{base_def.name}: versions {extra} from {older_label} do not extend {covered} contiguously"
            )
        widened = VersionRange(min(low, covered.low), max(high, covered.high))
        probe = lower_message({**merged, "validVersions": str(widened)})
        for v in extra:
            if resolve(probe, v) != resolve(older_def, v) or (v in probe.flexible_versions) != (
                v in older_def.flexible_versions
            ):
                raise ImportConflict(
                    f"{base_def.name} v{v}: {label} and {older_label} lay it out differently; "
                    "keep that version from a single source by hand"
                )
        covered = widened
        sources.append((VersionRange(low, high), older_label))
        merged["validVersions"] = str(widened)
    merged["versionSources"] = {str(r): lbl for r, lbl in sources}
    return merged


def import_specs(sources: list[tuple[str, Path]], out: Path) -> list[str]:
    by_name: dict[str, list[tuple[str, dict]]] = {}
    for label, directory in sources:
        files = sorted(directory.glob("*.json"))
        if not files:
            raise FileNotFoundError(f"no *.json message definitions in {directory}")
        for path in files:
            raw = read_json(path)
            by_name.setdefault(raw["name"], []).append((label, raw))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted(by_name):
        merged = merge(by_name[name])
        target = out / f"{name}.json"
        target.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
        written.append(target.name)
    stale = {p.name for p in out.glob("*.json")} - set(written)
    for name in stale:
        (out / name).unlink()
    return written


def _parse_source(text: str) -> tuple[str, Path]:
    if "=" in text and not Path(text).exists():
        label, path = text.split("=", 1)
        return label, Path(path)
    return source_label(Path(text)), Path(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="upstream definition directories, newest first ([LABEL=]DIR)")
    parser.add_argument("--out", required=True, type=Path, help="the project's specs/ directory")
    args = parser.parse_args(argv)
    try:
        written = import_specs([_parse_source(s) for s in args.sources], args.out)
    except (ImportConflict, FileNotFoundError, ValueError) as e:
        print(f"import failed: {e}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} message definitions to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
