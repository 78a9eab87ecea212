"""Benchmark of loading message definitions: the JSON directory against its krammar rendering.

Every executor process loads its specs once, so this is start-up cost, not a per-record one.
Times, in the same run: reading the bundled JSON directory into a registry, reading
specs/kafka.krammar into one, and resolving every message at every version from each (what a
decoder does lazily, per version it meets). Reports krammar/JSON ratios. Run:
    python benchmarks/bench_specs.py [--repeat 7]
"""

import argparse
import time

from kafka_protocol_source.spec.registry import DEFAULT_SPECS, SpecRegistry

KRAMMAR = DEFAULT_SPECS / "kafka.krammar"


def load_json() -> SpecRegistry:
    return SpecRegistry.from_directory(DEFAULT_SPECS)


def load_krammar() -> SpecRegistry:
    return SpecRegistry.from_path(KRAMMAR)


def resolve_all(load) -> int:
    registry = load()
    n = 0
    for message in registry.messages.values():
        for version in message.valid_versions.versions():
            registry.resolved(message.name, version)
            n += 1
    return n


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rows = [
        ("load", best(load_json, args.repeat), best(load_krammar, args.repeat)),
        (
            "load + resolve every version",
            best(lambda: resolve_all(load_json), args.repeat),
            best(lambda: resolve_all(load_krammar), args.repeat),
        ),
    ]
    versions = resolve_all(load_json)
    print(f"{len(load_json().messages)} messages, {versions} message versions")
    print(f"{'step':32} {'JSON ms':>10} {'krammar ms':>11} {'krammar/JSON':>13}")
    for step, json_s, krammar_s in rows:
        print(f"{step:32} {json_s * 1000:10.1f} {krammar_s * 1000:11.1f} {krammar_s / json_s:13.2f}")


if __name__ == "__main__":
    main()
