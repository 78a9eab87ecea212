"""Front-end for Kafka's JSON message definitions.

Reads one definition (Apache Kafka's upstream files, which carry ``//`` comments, or the
project's own ``specs/`` files, which are plain JSON with the same keys and no prose) and lowers
it into a ``MessageDef``. Knows nothing of wire encoding.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .ir import FieldDef, MessageDef, StructDef, TypeRef
from .versions import NONE, VersionRange

# Kafka's generator parses these files with Jackson's ALLOW_COMMENTS: whole-line and trailing
# ``//`` comments. A ``//`` inside a string literal must survive, hence the string alternative.
_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*')


def strip_comments(text: str) -> str:
    return _COMMENT.sub(lambda m: m.group(1) or "", text)


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(strip_comments(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read message definition {path}: {e}") from e


def _range(raw: dict, key: str, default: VersionRange = NONE) -> VersionRange:
    return VersionRange.parse(raw[key]) if key in raw else default


def lower_field(raw: dict[str, Any]) -> FieldDef:
    return FieldDef(
        name=raw["name"],
        type=TypeRef.parse(raw["type"]),
        versions=VersionRange.parse(raw["versions"]),
        nullable_versions=_range(raw, "nullableVersions"),
        tagged_versions=_range(raw, "taggedVersions"),
        tag=int(raw["tag"]) if raw.get("tag") is not None else None,  # some upstream files quote it
        flexible_versions=VersionRange.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None,
        default=None if "default" not in raw else str(raw["default"]),
        map_key=bool(raw.get("mapKey", False)),
        entity_type=raw.get("entityType"),
        ignorable=bool(raw.get("ignorable", False)),
        zero_copy=bool(raw.get("zeroCopy", False)),
        fields=tuple(lower_field(f) for f in raw.get("fields", ())),
    )


def lower_message(raw: dict[str, Any]) -> MessageDef:
    sources = tuple((VersionRange.parse(rng), src) for rng, src in raw.get("versionSources", {}).items())
    return MessageDef(
        name=raw["name"],
        kind=raw["type"],
        api_key=raw.get("apiKey"),
        valid_versions=VersionRange.parse(raw["validVersions"]),
        flexible_versions=_range(raw, "flexibleVersions"),
        fields=tuple(lower_field(f) for f in raw.get("fields", ())),
        common_structs=tuple(
            StructDef(s["name"], VersionRange.parse(s["versions"]), tuple(lower_field(f) for f in s["fields"]))
            for s in raw.get("commonStructs", ())
        ),
        latest_version_unstable=bool(raw.get("latestVersionUnstable", False)),
        deprecated_versions=_range(raw, "deprecatedVersions"),
        listeners=tuple(raw.get("listeners", ())),
        version_sources=sources,
    )


def load_message(path: Path) -> MessageDef:
    return lower_message(read_json(path))
