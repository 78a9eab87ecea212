"""Cross-check the sample captures with an independent dissector: tshark's Kafka dissector.

For each capture in a folder (and the broker port from its NAME.produced.json) print the packet
count, how many Kafka PDUs tshark finds, and which API keys (name + versions) appear as requests.
tshark 4.0 knows Kafka 2.4-era versions: newer versions show as "Unsupported API version" or
malformed, which is tshark's limit, not the capture's. Prints a Markdown table for the README.

    python tools/check_captures.py [--dir sample_captures]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
INFO = re.compile(r"Kafka (Unknown \d+|\w+) v(\d+) (Request|Response)")


def tshark_lines(capture: Path, *args: str) -> list[str]:
    out = subprocess.run(["tshark", "-r", str(capture), *args], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def summarize(capture: Path, port: int) -> dict:
    packets = len(tshark_lines(capture, "-T", "fields", "-e", "frame.number"))
    infos = tshark_lines(capture, "-d", f"tcp.port=={port},kafka", "-Y", "kafka", "-T", "fields", "-e", "_ws.col.Info")
    # One packet can hold several PDUs; tshark joins their Info texts with commas.
    pdus = [part for line in infos for part in re.findall(r"Kafka [^,\[]+", line)]
    requests: dict[str, set[int]] = defaultdict(set)
    responses = 0
    for pdu in pdus:
        match = INFO.search(pdu)
        if match and match.group(3) == "Request":
            requests[match.group(1)].add(int(match.group(2)))
        elif "Response" in pdu:
            responses += 1
    keys = ", ".join(f"{name} v{'/'.join(map(str, sorted(versions)))}" for name, versions in sorted(requests.items()))
    return {
        "packets": packets,
        "kafka_packets": len(infos),
        "pdus": len(pdus),
        "responses": responses,
        "requests": keys,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=REPO_ROOT / "sample_captures")
    args = parser.parse_args()
    print("| capture | packets | packets with Kafka | Kafka PDUs (responses) | request API keys tshark names |")
    print("| --- | --- | --- | --- | --- |")
    for produced in sorted(args.dir.glob("*.produced.json")):
        manifest = json.loads(produced.read_text())
        capture = args.dir / manifest["capture"]
        s = summarize(capture, manifest["broker"]["port"])
        print(
            f"| {capture.name} | {s['packets']} | {s['kafka_packets']} | {s['pdus']} ({s['responses']}) "
            f"| {s['requests']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
