"""Expand the paths of a load the way Spark's file sources do: files, directories, globs.

A directory gives the files directly in it (all levels with ``recursiveFileLookup``); a glob is
expanded; ``pathGlobFilter`` keeps file names that match. Hidden files (``.x``, ``_x``) and the
golden/manifest side files of sample captures are skipped, as Spark skips ``_SUCCESS`` and
dot-files. A path that matches nothing is an error, as in Spark.
"""

from __future__ import annotations

import fnmatch
import glob
import os

_SIDE_FILES = (".json", ".jsonl", ".md", ".txt", ".crc")


def expand(paths, recursive: bool = False, glob_filter: str | None = None) -> list[str]:
    found: list[str] = []
    for raw in paths:
        path = raw[len("file:") :] if raw.startswith("file:") else raw
        path = os.path.expanduser(path)
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else ([path] if os.path.exists(path) else [])
        if not matches:
            raise FileNotFoundError(f"[PATH_NOT_FOUND] Path does not exist: {raw}")
        for match in matches:
            if os.path.isdir(match):
                found += _walk(match, recursive)
            else:
                found.append(match)
    if glob_filter:
        found = [f for f in found if fnmatch.fnmatch(os.path.basename(f), glob_filter)]
    seen, unique = set(), []
    for f in found:
        key = os.path.abspath(f)
        if key not in seen:
            seen.add(key)
            unique.append(key)
    return unique


def _walk(directory: str, recursive: bool) -> list[str]:
    out = []
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir():
            if recursive:
                out += _walk(entry.path, True)
        elif not entry.name.endswith(_SIDE_FILES):
            out.append(entry.path)
    return out
