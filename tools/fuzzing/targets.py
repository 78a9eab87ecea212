"""What is run on each input, and what counts as going wrong there.

Owns the two targets the runner drives (a target builds its shared material in ``warm``,
makes input ``index`` in ``generate``, runs it in ``check`` and writes it out in ``save``):

* `FrameTarget`: ``decode_request`` / ``decode_response`` may return or raise ``DecodeError``
  (without a MemoryError or a bug of ours behind it); anything else is a crash.
* `CaptureTarget`: ``read_capture`` must never raise for a readable file; its rows must not
  carry laundered Python errors, and, when ``tests/accounting.py`` provides
  ``check_accounting``, every payload byte must be in exactly one row.

Does not run processes or apply limits (see `runner`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import kafka_protocol_source
from kafka_protocol_source.codec.decoder import decoder_for
from kafka_protocol_source.codec.errors import DecodeError
from kafka_protocol_source.framing.model import STATUSES

from . import capture_cases, frame_cases
from .corpus import ROOT
from .findings import ACCOUNTING, WRAPPED, Finding, from_decode_error, laundered_strings

CAPTURE_ERROR = "capture_error"


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

    def __init__(self, families: dict[str, float] | None = None, catalog: bool = True):
        self.families = families
        self.catalog = catalog

    def warm(self) -> None:
        warm_parsers()
        frame_cases.warm()

    def generate(self, seed: int, index: int) -> frame_cases.FrameCase:
        return frame_cases.case(seed, index, self.families, self.catalog)

    def check(self, case: frame_cases.FrameCase) -> list[Finding]:
        try:
            if case.direction == "request":
                result = kafka_protocol_source.decode_request(case.payload, lenient=case.lenient)
            else:
                request = None
                if case.request_payload is not None:
                    try:
                        request = kafka_protocol_source.decode_request(case.request_payload)
                    except DecodeError:
                        request = None
                result = kafka_protocol_source.decode_response(case.payload, case.api_key, case.api_version,
                                                               request=request, lenient=case.lenient)
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
        return frame_cases.FrameCase(meta["family"], meta["direction"], (directory / f"{stem}.bin").read_bytes(),
                                     meta["api_key"], meta["api_version"], meta["lenient"],
                                     request.read_bytes() if request.exists() else None, tuple(meta["notes"]))


def load_check_accounting():
    """``tests.accounting.check_accounting`` if the checkout has it, else None."""
    try:
        from tests.accounting import check_accounting  # noqa: PLC0415 - optional, from the test suite
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
        if self.accounting != "off":
            self.check_accounting = load_check_accounting()
            if self.check_accounting is None and self.accounting == "on":
                raise RuntimeError("--accounting on, but tests/accounting.py has no check_accounting to import "
                                   f"(looked from {ROOT})")

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
            path = directory / case.read
            found: list[Finding] = []
            for exchange in kafka_protocol_source.read_capture(path, **case.options):
                if exchange.status not in STATUSES and exchange.status != CAPTURE_ERROR:
                    found.append(Finding(WRAPPED, f"unknown status {exchange.status!r}", repr(exchange)[:2000]))
                found += laundered_strings({"error": exchange.error, "note": exchange.note,
                                            "request": exchange.request, "response": exchange.response})
            if self.check_accounting is not None and case.accountable:
                violations = self.check_accounting(str(path), **case.accounting_options)
                if violations:
                    found.append(Finding(ACCOUNTING, f"accounting: {_shape(violations[0])}",
                                         "\n".join(map(str, violations[:50]))))
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
        return capture_cases.CaptureCase(meta["family"], files, meta["read"], meta["options"], tuple(meta["notes"]))


def _shape(violation) -> str:
    """A violation's text with its numbers blanked, so alike violations share a signature."""
    import re  # noqa: PLC0415

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
