"""What is run on each input, and what counts as going wrong there.

Owns the two targets the runner drives (a target builds its shared material in ``warm``,
makes input ``index`` in ``generate``, runs it in ``check`` and writes it out in ``save``):

* `FrameTarget`: ``decode_request`` / ``decode_response`` may return or raise ``DecodeError``
  (without a MemoryError or a bug of ours behind it); anything else is a crash. They are the
  methods of ``decoder_for()``, what the module-level functions call (a bytes copy aside), or,
  for a case marked cold, of a new ``Decoder`` that has built no parser yet.
* `CaptureTarget`: ``read_capture`` must never raise for a readable file, nor give an
  ``internal_error`` row (a bug it caught: counted as the crash it is); its rows must not carry
  laundered Python errors, and, when ``tests/accounting.py`` provides ``check_accounting``,
  every payload byte must be in exactly one row.

Does not run processes or apply limits (see `runner`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import kafka_protocol_source
from kafka_protocol_source.codec.decoder import Decoder, decoder_for
from kafka_protocol_source.codec.errors import DecodeError
from kafka_protocol_source.framing.model import STATUSES

from . import capture_cases, frame_cases
from .corpus import ROOT
from .findings import ACCOUNTING, CRASH, WRAPPED, Finding, from_decode_error, from_exception, laundered_strings

INTERNAL_ERROR = "internal_error"  # framing.model's name for "a bug of ours while reading one connection"
_INTERNAL_ERRORS: list[BaseException] = []  # what the probe saw, for the current input


def _probe_internal_errors() -> None:
    """Keep the exception behind each ``internal_error`` row, whose text has no traceback.

    ``pipeline._internal_error`` builds those rows inside the ``except`` that caught the bug, so
    ``sys.exc_info()`` there still holds it, with the frame it came from. Reading it changes
    nothing of what the pipeline does.
    """
    try:
        from kafka_protocol_source import pipeline
    except ImportError:
        return
    original = getattr(pipeline, "_internal_error", None)
    if original is None or getattr(original, "fuzz_probe", False):
        return

    def probe(*args, **kwargs):
        caught = sys.exc_info()[1]
        if caught is not None:
            _INTERNAL_ERRORS.append(caught)
        return original(*args, **kwargs)

    probe.fuzz_probe = True
    pipeline._internal_error = probe


def _internal_error_finding(exchange) -> Finding:
    """An ``internal_error`` row is a crash the pipeline caught: same signature, marked as a row."""
    caught = _INTERNAL_ERRORS.pop(0) if _INTERNAL_ERRORS else None
    if caught is None:
        return Finding(CRASH, f"internal_error row: {_shape(exchange.error or '')[:100]}", exchange.error or "")
    finding = from_exception(caught)
    return Finding(finding.category, f"{finding.signature} (internal_error row)", finding.detail)


def warm_parsers() -> None:
    """Build every parser once, in the parent, so forked workers share them.

    Data messages too (embedded ones such as DefaultPrincipalData): an input must behave the
    same whichever inputs its worker ran before, and a parser first built deep in a recursion
    fails differently from one that was there already.
    """
    decoder = decoder_for()
    for name, message in sorted(decoder.registry.messages.items()):
        versions = message.valid_versions
        for version in range(versions.low, versions.high + 1):
            if version in versions:
                decoder.parsers.get(name, version)


class FrameTarget:
    kind = "frames"

    def __init__(self, families: dict[str, float] | None = None, catalog: str = "full"):
        self.families = families
        self.catalog = catalog

    def warm(self) -> None:
        warm_parsers()
        frame_cases.warm()

    def generate(self, seed: int, index: int) -> frame_cases.FrameCase:
        return frame_cases.case(seed, index, self.families, self.catalog)

    def check(self, case: frame_cases.FrameCase) -> list[Finding]:
        decoder = Decoder(decoder_for().registry) if case.cold else decoder_for()
        try:
            if case.direction == "request":
                result = decoder.decode_request(case.payload, lenient=case.lenient, protocol_type=case.protocol_type)
            else:
                request = None
                if case.request_payload is not None:
                    try:
                        request = decoder.decode_request(case.request_payload)
                    except DecodeError:
                        request = None
                result = decoder.decode_response(
                    case.payload,
                    case.api_key,
                    case.api_version,
                    request=request,
                    lenient=case.lenient,
                    protocol_type=case.protocol_type,
                )
        except DecodeError as e:
            return from_decode_error(e)
        return laundered_strings(result)

    def save(self, case: frame_cases.FrameCase, directory: Path, stem: str) -> list[Path]:
        paths = [directory / f"{stem}.bin"]
        paths[0].write_bytes(case.payload)
        if case.request_payload is not None:
            paths.append(directory / f"{stem}.request.bin")
            paths[-1].write_bytes(case.request_payload)
        return paths

    @staticmethod
    def load(meta: dict, directory: Path, stem: str) -> frame_cases.FrameCase:
        request = directory / f"{stem}.request.bin"
        return frame_cases.FrameCase(
            meta["family"],
            meta["direction"],
            (directory / f"{stem}.bin").read_bytes(),
            meta["api_key"],
            meta["api_version"],
            meta["lenient"],
            request.read_bytes() if request.exists() else None,
            meta.get("protocol_type"),
            meta.get("cold", False),
            tuple(meta["notes"]),
        )


def load_check_accounting():
    """``tests.accounting.check_accounting`` if the checkout has it, else None."""
    try:
        from tests.accounting import check_accounting
    except ImportError:
        return None
    return check_accounting


class CaptureTarget:
    kind = "captures"

    def __init__(self, accounting: str = "auto", families: dict[str, float] | None = None):
        if accounting not in ("auto", "on", "off"):
            raise ValueError(accounting)
        self.accounting = accounting
        self.families = families
        self.check_accounting = None
        self.workdir: str | None = None

    def warm(self) -> None:
        warm_parsers()
        capture_cases.warm()
        _probe_internal_errors()
        if self.accounting != "off":
            self.check_accounting = load_check_accounting()
            if self.check_accounting is None and self.accounting == "on":
                raise RuntimeError(
                    f"--accounting on, but tests/accounting.py has no check_accounting to import (looked from {ROOT})"
                )

    def generate(self, seed: int, index: int) -> capture_cases.CaptureCase:
        return capture_cases.case(seed, index, self.families)

    def _dir(self) -> str:
        if self.workdir is None or not os.path.isdir(self.workdir):
            base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
            self.workdir = tempfile.mkdtemp(prefix=f"kafka-wire-fuzz-{os.getpid()}-", dir=base)
        return self.workdir

    def check(self, case: capture_cases.CaptureCase) -> list[Finding]:
        directory = Path(tempfile.mkdtemp(dir=self._dir()))
        try:
            for name, data in case.files.items():
                (directory / name).write_bytes(data)
            paths = [directory / name for name in case.read]
            found: list[Finding] = []
            _INTERNAL_ERRORS.clear()
            for exchange in kafka_protocol_source.read_capture(paths[0] if len(paths) == 1 else paths, **case.options):
                if exchange.status == INTERNAL_ERROR:
                    found.append(_internal_error_finding(exchange))
                    continue
                if exchange.status not in STATUSES:
                    found.append(Finding(WRAPPED, f"unknown status {exchange.status!r}", repr(exchange)[:2000]))
                found += laundered_strings(
                    {
                        "error": exchange.error,
                        "note": exchange.note,
                        "request": exchange.request,
                        "response": exchange.response,
                    }
                )
            if self.check_accounting is not None and case.accountable:
                try:
                    violations = [
                        v
                        for v in self.check_accounting(str(paths[0]), **case.accounting_options)
                        if "kafka-wire failed reading" not in str(v)
                    ]  # internal_error rows: crashes above
                except Exception as e:  # noqa: BLE001 - read_capture got through; the checker did not
                    failed = from_exception(e)
                    found.append(Finding(ACCOUNTING, f"check_accounting raised {failed.signature}", failed.detail))
                    violations = []
                if violations:
                    found.append(
                        Finding(
                            ACCOUNTING, f"accounting: {_shape(violations[0])}", "\n".join(map(str, violations[:50]))
                        )
                    )
            return _dedupe(found)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def save(self, case: capture_cases.CaptureCase, directory: Path, stem: str) -> list[Path]:
        paths = []
        folder = directory / stem
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in case.files.items():
            paths.append(folder / name)
            paths[-1].write_bytes(data)
        return paths

    @staticmethod
    def load(meta: dict, directory: Path, stem: str) -> capture_cases.CaptureCase:
        folder = directory / stem
        files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
        return capture_cases.CaptureCase(
            meta["family"], files, tuple(meta["read"]), meta["options"], tuple(meta["notes"])
        )


def _shape(violation) -> str:
    """A violation's text with its numbers blanked, so alike violations share a signature."""
    return re.sub(r"\d+", "N", str(violation))[:120]


def _dedupe(found: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in found:
        if (f.category, f.signature) not in seen:
            seen.add((f.category, f.signature))
            out.append(f)
    return out


def meta_json(meta: dict) -> str:
    return json.dumps(meta, indent=2, sort_keys=True, default=str)
