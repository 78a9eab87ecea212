"""``python -m kafka_protocol_source.codec MESSAGE VERSION [--specs PATH] [--out FILE]``.

Writes the Python source construct generates for one message at one version (what the parser
cache compiles and runs), for debugging a parser: construct's ``compile(filename=...)``.
"""

from __future__ import annotations

import argparse
import sys

from .builder import build_parser
from .decoder import decoder_for


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_protocol_source.codec", description=__doc__.splitlines()[2])
    parser.add_argument("message", help="a message name, e.g. FetchResponse, RequestHeader, ConsumerProtocolAssignment")
    parser.add_argument("version", type=int)
    parser.add_argument("--specs", help="a definitions directory or krammar file (default: the bundled specs)")
    parser.add_argument("--out", default=None, help="file to write the source to (default: MESSAGE_vVERSION.py)")
    args = parser.parse_args(argv)
    registry = decoder_for(args.specs).registry
    try:
        struct = registry.resolved(args.message, args.version)
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    out = args.out or f"{args.message}_v{args.version}.py"
    build_parser(struct).compile(filename=out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
