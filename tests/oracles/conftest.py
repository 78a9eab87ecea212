"""Fixtures and hypothesis set-up shared by the oracle tests (kept out of tests/conftest.py),
and a per-oracle coverage line at the end of the run: how many (api, version, direction)
cases each oracle ran, passed, failed, skipped or xfailed."""

from __future__ import annotations

from collections import Counter, defaultdict

from .strategies import register_kio_types

# kio's Records type has no strategy of its own; register valid record sets once per session.
register_kio_types()

_ORACLES = {"test_kio_oracle.py": "kio 0.5.0", "test_kafka_python_oracle.py": "kafka-python 3.0.12"}
_outcomes: dict[str, Counter] = defaultdict(Counter)


def _oracle_of(nodeid: str) -> str | None:
    for module, oracle in _ORACLES.items():
        if f"/oracles/{module}::" in nodeid or nodeid.startswith(f"{module}::"):
            return oracle
    return None


def pytest_runtest_logreport(report):
    oracle = _oracle_of(report.nodeid)
    if oracle is None:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        _outcomes[oracle][outcome] += 1


def pytest_terminal_summary(terminalreporter):
    if not _outcomes:
        return
    terminalreporter.section("oracle coverage: (api, version, direction) cases")
    for oracle, counts in sorted(_outcomes.items()):
        parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        terminalreporter.write_line(f"{oracle}: {sum(counts.values())} cases: {parts}")
