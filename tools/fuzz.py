"""Hostile-input campaign against kafka-wire's public entry points (issue 11).

    python tools/fuzz.py frames   --count 1000000 --seed 1 --jobs 2 --out /tmp/fuzz
    python tools/fuzz.py captures --count 10000   --seed 1 --jobs 2 --out /tmp/fuzz
    python tools/fuzz.py repro /tmp/fuzz/frames/<signature>/seed1-123.json [--in-process]
    python tools/fuzz.py minimize /tmp/fuzz/frames/<signature>/seed1-123.json

``frames`` feeds ``decode_request`` / ``decode_response`` mutated real frames, spec-written
frames of every api key and version, random bodies, records and compression bombs; only
``DecodeError`` may come out. ``captures`` feeds ``read_capture`` mutated sample captures
(packets dropped, duplicated, reordered, cut; absurd header fields; corrupt gzip; late
starts; pieces; a second interface); nothing may come out but exchanges. Each input runs in a
child process with a time and a memory limit; the report counts inputs, crashes, hangs,
memory over the bound, byte-accounting violations (with ``tests/accounting.py``) and internal
errors laundered into decode errors, by signature (exception type + innermost package frame).
Inputs are a pure function of (seed, index), so any one can be run again alone. Exit status 1
when a crash, hang, memory or accounting count is not zero. The code is in ``tools/fuzzing/``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.fuzzing.cli import main  # needs the checkout on sys.path first

if __name__ == "__main__":
    sys.exit(main())
