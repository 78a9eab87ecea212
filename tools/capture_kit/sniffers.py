"""Packet capture around a session: tcpdump (pcap, microsecond or nanosecond, lo or any/SLL2) or
tshark (pcapng with interface blocks).

Owns starting the capture program, waiting until it is really capturing, and stopping it so every
packet is flushed. Knows nothing about Kafka.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# libpcap's TPACKET_V3 ring hands packets over a block at a time, at the latest after tcpdump's 1 s
# buffer timeout, and SIGINT discards a block not yet handed over: with a 0.7 s pause short sessions
# lost their last packets. The pause must outlast that timeout. (--immediate-mode avoids the batching
# but made `-i any` drop packets in the kernel, so it is not used.)
FLUSH_PAUSE_S = 1.5


@dataclass(frozen=True)
class Sniffer:
    """How a capture is taken: the command and the stderr text that says capture has begun."""

    name: str
    suffix: str
    link_type: str
    ready_text: str

    def command(self, path: Path, port: int) -> list[str]:
        bpf = f"tcp port {port}"
        if self.name == "tcpdump_lo":
            return ["tcpdump", "-i", "lo", "-U", "-w", str(path), bpf]
        if self.name == "tcpdump_lo_nano":
            return ["tcpdump", "-i", "lo", "-U", "--time-stamp-precision=nano", "-w", str(path), bpf]
        if self.name == "tcpdump_any_sll2":
            return ["tcpdump", "-i", "any", "-y", "LINUX_SLL2", "-U", "-w", str(path), bpf]
        if self.name == "tshark_pcapng":
            return ["tshark", "-i", "lo", "-f", bpf, "-w", str(path)]
        raise ValueError(f"unknown sniffer {self.name}")


SNIFFERS = {
    s.name: s
    for s in (
        # Linux lo gives DLT_EN10MB with zeroed MAC addresses (not DLT_NULL as on the BSDs/macOS).
        Sniffer("tcpdump_lo", ".pcap", "EN10MB (Ethernet, zero MACs), pcap usec", "listening on"),
        Sniffer("tcpdump_lo_nano", ".pcap", "EN10MB (Ethernet, zero MACs), pcap nsec (magic a1b23c4d)", "listening on"),
        Sniffer("tcpdump_any_sll2", ".pcap", "LINUX_SLL2 (276), pcap usec", "listening on"),
        Sniffer("tshark_pcapng", ".pcapng", "pcapng, one IDB: lo EN10MB", "Capturing on"),
    )
}


@contextmanager
def sniffing(sniffer: Sniffer, path: Path, port: int, ready_timeout: float = 10.0) -> Iterator[list[str]]:
    """Capture `tcp port PORT` into PATH while the block runs; yields the sniffer's stderr lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    proc = subprocess.Popen(sniffer.command(path, port), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready: queue.Queue[bool] = queue.Queue()

    def drain() -> None:
        for line in proc.stderr:
            lines.append(line.rstrip())
            if sniffer.ready_text in line:
                ready.put(True)
        ready.put(False)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not ready.get(timeout=ready_timeout):
            raise RuntimeError(f"{sniffer.name} stopped before capturing: {lines}")
    except queue.Empty as e:
        proc.kill()
        raise TimeoutError(f"{sniffer.name} did not report {sniffer.ready_text!r}: {lines}") from e
    try:
        yield lines
    finally:
        time.sleep(FLUSH_PAUSE_S)  # let the last ACKs and FINs reach the socket before we stop
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(2)
    dropped = [line for line in lines if "dropped by kernel" in line and not line.startswith("0 ")]
    if dropped:
        raise RuntimeError(f"{sniffer.name} lost packets, the capture has gaps: {dropped}")
