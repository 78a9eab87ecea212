"""Test helper: the sample captures, what we read from them, and what tshark reads from them.

Owns the list of sample captures (every ``NAME.produced.json`` in ``sample_captures/`` plus the
tcpflow dump pair), the broker port of each (from its manifest), and two per-process caches: our
``read_capture`` output and tshark's Kafka PDUs. Each capture is read and dissected once per test
session, so the sample tests stay fast. The tcpflow pair has no packets of its own: tshark's view
of it is the same connection in the capture it was cut from.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kafka_protocol_source import Exchange, read_capture

SAMPLES = Path(__file__).resolve().parents[2] / "sample_captures"
TSHARK = shutil.which("tshark")


@dataclass(frozen=True)
class Sample:
    name: str
    path: Path  # what read_capture is given (for the tcpflow pair: its client -> broker file)
    broker_port: int
    manifest: dict  # NAME.produced.json (for the tcpflow pair: that of the capture it was cut from)
    tshark_file: Path  # the packets tshark dissects
    tshark_filter: str  # display filter selecting this sample's traffic in tshark_file
    codecs: tuple[str, ...] | None = None  # produced codecs present (None: all in the manifest)


def _tcpflow_port(name: str) -> int:
    return int(name.rsplit(".", 1)[1])


@functools.cache
def samples() -> tuple[Sample, ...]:
    found = []
    for produced in sorted(SAMPLES.glob("*.produced.json")):
        manifest = json.loads(produced.read_text())
        path = SAMPLES / manifest["capture"]
        port = manifest["broker"]["port"]
        found.append(Sample(path.name.split(".")[0], path, port, manifest, path, "kafka"))
        dump_dir = SAMPLES / f"tcpflow_{path.name.split('.')[0]}"
        if dump_dir.is_dir():
            # tcpflow names a file SRC-DST; the requests file is the one going to the broker port.
            client_file = next(f for f in sorted(dump_dir.iterdir()) if _tcpflow_port(f.name.split("-")[1]) == port)
            client_port = _tcpflow_port(client_file.name.split("-")[0])
            found.append(
                Sample(
                    dump_dir.name,
                    client_file,
                    port,
                    manifest,
                    path,
                    f"kafka && tcp.port == {client_port}",
                    codecs=("none",),
                )
            )
    return tuple(sorted(found, key=lambda s: s.name))


def sample_names() -> list[str]:
    return [s.name for s in samples()]


def sample(name: str) -> Sample:
    return next(s for s in samples() if s.name == name)


@functools.cache
def exchanges(name: str) -> tuple[Exchange, ...]:
    s = sample(name)
    return tuple(read_capture(s.path, ports=(s.broker_port,)))


@dataclass(frozen=True)
class Pdu:
    """One Kafka PDU as tshark dissects it (fields it could not decode are None)."""

    frame: int  # frame number (1-based) of the packet that completes the PDU
    stream: int  # tcp.stream
    src: str  # "ip:port"
    dst: str
    length: int  # kafka.len: the size prefix's value
    is_request: bool  # tshark saw it as a request (kafka.request_key)
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    client_id: str | None
    request_frame: int | None  # for a response: the frame tshark matched its request in
    malformed: bool  # tshark flagged the packet malformed (its limits: Kafka 2.4-era versions)


def _int(layer: dict, field: str) -> int | None:
    value = layer.get(field)
    if isinstance(value, list):  # a repeated field: the header's comes first
        value = value[0]
    return None if value is None else int(value)


def _address(layers: dict, side: str) -> str:
    ip = layers.get("ip", {}).get(f"ip.{side}") or layers.get("ipv6", {}).get(f"ipv6.{side}")
    port = layers["tcp"][f"tcp.{side}port"]
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


@functools.cache
def tshark_pdus(name: str) -> tuple[Pdu, ...]:
    """tshark's Kafka PDUs of one sample (one tshark run per capture file and filter per session)."""
    s = sample(name)
    cmd = [
        TSHARK,
        "-r",
        str(s.tshark_file),
        "-n",
        "-d",
        f"tcp.port=={s.broker_port},kafka",
        "-Y",
        s.tshark_filter,
        "-T",
        "json",
        "--no-duplicate-keys",
        "-j",
        "frame ip ipv6 tcp kafka _ws.malformed",
    ]
    packets = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    pdus = []
    for packet in packets:
        layers = packet["_source"]["layers"]
        kafka = layers["kafka"] if isinstance(layers["kafka"], list) else [layers["kafka"]]
        malformed = "_ws.malformed" in layers or any("_ws.malformed" in k for k in kafka)
        for k in kafka:  # one packet can complete several PDUs
            is_request = "kafka.request_key" in k
            client_id = k.get("kafka.client_id")
            pdus.append(
                Pdu(
                    frame=int(layers["frame"]["frame.number"]),
                    stream=int(layers["tcp"]["tcp.stream"]),
                    src=_address(layers, "src"),
                    dst=_address(layers, "dst"),
                    length=_int(k, "kafka.len"),
                    is_request=is_request,
                    api_key=_int(k, "kafka.request_key" if is_request else "kafka.response_key"),
                    api_version=_int(k, "kafka.request.version" if is_request else "kafka.response.version"),
                    correlation_id=_int(k, "kafka.correlation_id"),
                    client_id=client_id[0] if isinstance(client_id, list) else client_id,
                    request_frame=_int(k, "kafka.request_frame"),
                    malformed=malformed,
                )
            )
    return tuple(pdus)


def is_client_side(pdu: Pdu, s: Sample) -> bool:
    return pdu.dst.rsplit(":", 1)[1] == str(s.broker_port)


def connection(e: Exchange) -> tuple[str, str]:
    return e.client_address, e.broker_address
