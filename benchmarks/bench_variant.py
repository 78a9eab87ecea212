"""Benchmark VARIANT encoding of decoded bodies: ours against PySpark's own Python encoder.

The bodies are those of the sample captures (every api the samples hold, records decoded), each
encoded once per round by ``VariantEncoder`` (one encoder for all, as a Spark task uses it): by
its generic walk ("ours"), and with the encoder compiled from the spec of the body's message
version ("ours/spec", as the exchanges view does), and by PySpark's ``VariantUtils.parse_json``
(the only VARIANT writer PySpark has, fed the body as JSON; the JSON is built beforehand and not
timed). Rounds alternate the three, CPU time, best of ``--repeat``. All outputs are read back
with ``VariantUtils.to_python`` and must agree.

    python benchmarks/bench_variant.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def bodies() -> list:
    """(body, the encoder compiled for its message version) of every sample exchange."""
    from kafka_protocol_source.codec.decoder import decoder_for
    from kafka_protocol_source.pipeline import read_capture
    from kafka_protocol_source.views.variant_spec import BodyEncoders

    specs = BodyEncoders(decoder_for(None).registry)
    found = []
    for path in sorted((ROOT / "sample_captures").glob("*.pcap*")):
        for ex in read_capture(str(path)):
            if ex.request is not None:
                found.append((ex.request, specs.request(ex.api_key, ex.api_version)))
            if ex.response is not None:
                found.append((ex.response, specs.response(ex.api_key, ex.api_version)))
    return found


def as_json(value):
    """The body as JSON can say it: bytes as base64 strings."""
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    return value


def main() -> None:
    from pyspark.sql.variant_utils import VariantUtils

    from kafka_protocol_source.views.variant import VariantEncoder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    found = bodies()
    texts = [json.dumps(as_json(b)) for b, _ in found]
    encoder = VariantEncoder()
    for (body, spec), text in zip(found, texts, strict=True):
        theirs = VariantUtils.to_python(*VariantUtils.parse_json(text))
        for ours in (encoder.encode(body), encoder.encode(body, spec)):
            assert json.loads(json.dumps(as_json(VariantUtils.to_python(*ours)))) == theirs

    def run_ours():
        for body, _ in found:
            encoder.encode(body)

    def run_ours_spec():
        for body, spec in found:
            encoder.encode(body, spec)

    def run_pyspark():
        for text in texts:
            VariantUtils.parse_json(text)

    best = {"ours": float("inf"), "ours/spec": float("inf"), "pyspark": float("inf")}
    for _ in range(args.repeat):
        for name, run in (("ours", run_ours), ("ours/spec", run_ours_spec), ("pyspark", run_pyspark)):
            t = time.process_time()
            run()
            best[name] = min(best[name], time.process_time() - t)
    n = len(found)
    print(f"{n} bodies from the sample captures")
    print(f"{'encoder':<10}{'bodies/s':>12}{'us/body':>10}")
    for name, seconds in best.items():
        print(f"{name:<10}{n / seconds:>12,.0f}{seconds / n * 1e6:>10.1f}")
    print(f"ours / pyspark: {best['pyspark'] / best['ours']:.2f}x")
    print(f"ours, compiled from the spec / pyspark: {best['pyspark'] / best['ours/spec']:.2f}x")
    print(f"ours, compiled from the spec / ours: {best['ours'] / best['ours/spec']:.2f}x")


if __name__ == "__main__":
    main()
