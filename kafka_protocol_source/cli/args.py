"""The command line: sub-commands, their options, and what they mean once checked.

    kafka-wire report PATH... [--top 10] [--html report.html]
    kafka-wire sql PATH... "QUERY" ["QUERY"...] [--format table|csv|json] [--output FILE|DIR]...
    kafka-wire shell PATH...
    kafka-wire --version

Usage mistakes end the command with one line and exit code 2, and a misspelled flag is
answered with the closest one. A sub-command's options may come before, between or after its
paths and queries.
"""

from __future__ import annotations

import argparse
import difflib
import glob
import os
import sys
from dataclasses import dataclass, field
from importlib import metadata

from .errors import USAGE, UsageError
from .output import DEFAULT_MAX_ROWS, FORMATS, Destination, destination_for
from .report import REPORT_FORMATS
from .views import VIEW_LIST

PATHS_HELP = "pcap/pcapng files (.gz too), stream dumps, directories, globs"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an error is one line, with the closest flag for an unknown one."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments:"):
            flags = sorted(_flags(self))
            for arg in message.split(":", 1)[1].split():
                close = difflib.get_close_matches(arg.split("=", 1)[0], flags, n=1) if arg.startswith("-") else []
                if close:
                    message += f" (did you mean {close[0]}?)"
                    break
        self.exit(USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


class SubcommandParser(OneLineParser):
    """A sub-command: options and positionals intermixed, its own unknown flags reported with its own help.

    argparse gives a ``nargs="+"`` positional only the arguments before the first option, so
    ``sql a.pcap --ports 9093 "SELECT 1"`` would leave the query over; intermixed parsing reads the
    options first and then the positionals. ``parse_known_intermixed_args`` calls
    ``parse_known_args`` itself, hence the guard.
    """

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            parsed, extras = self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every flag of ``parser`` and its sub-commands (the top parser reports their unknown flags)."""
    flags: set[str] = set()
    for action in parser._actions:
        flags.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags |= _flags(sub)
    return flags


def version() -> str:
    try:
        return metadata.version("kafka-wire")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kafka-wire", description="Kafka traffic in packet captures, as tables.")
    parser.add_argument("--version", action="version", version=f"kafka-wire {version()}")
    common = SubcommandParser(add_help=False)  # parents share the class of the parsers they shape
    common.add_argument("--ports", default="9092", help="broker ports, comma-separated (default 9092)")
    common.add_argument(
        "--specs",
        help="message definitions to decode with: a directory of Kafka JSON files "
        "or a krammar file (default: the bundled specs)",
    )
    common.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other kafka-wire read option (repeatable)",
    )
    common.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    common.add_argument(
        "--verbose",
        action="store_true",
        help="Spark's own log and progress bars (and web UI) instead of the quiet defaults",
    )
    common.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line on stderr (it is shown only when stderr is a terminal)",
    )
    results = SubcommandParser(add_help=False)
    results.add_argument(
        "--format", choices=FORMATS, help="how to print results: table (default), csv or json (JSON lines)"
    )
    results.add_argument(
        "--max-rows",
        type=int,
        default=DEFAULT_MAX_ROWS,
        metavar="N",
        help=f"table format: show at most N rows, then say how many were left out (default {DEFAULT_MAX_ROWS}; 0: all)",
    )

    sub = parser.add_subparsers(dest="command", required=True, parser_class=SubcommandParser)
    report = sub.add_parser("report", parents=[common], help="print a traffic summary of the captures")
    report.add_argument("paths", nargs="+", help=PATHS_HELP)
    report.add_argument("--top", type=int, default=10, help="how many topics to list (default 10)")
    report.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with plots to FILE")
    report.add_argument(
        "--format",
        choices=REPORT_FORMATS,
        default="table",
        help="table (default), or json: one document, a key per section and the summary's counts",
    )
    sql = sub.add_parser(
        "sql",
        parents=[common, results],
        help=f"run SQL over the views {VIEW_LIST} (several queries: one session)",
    )
    sql.add_argument("args", nargs="+", metavar="PATH_OR_QUERY", help=f"{PATHS_HELP}, then one or more queries")
    sql.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="FILE_OR_DIR",
        help="write the result there instead of stdout: .csv, .json/.jsonl, or Parquet for a "
        "path ending in .parquet or a directory; - is stdout (one --output per query)",
    )
    shell = sub.add_parser(
        "shell",
        parents=[common, results],
        help="read SQL statements from stdin, each ended by ';', over one Spark session",
    )
    shell.add_argument("paths", nargs="+", help=PATHS_HELP)
    return parser


@dataclass(frozen=True)
class Command:
    name: str
    paths: list[str]
    options: dict  # read options for the kafka-wire source
    master: str
    verbose: bool
    progress: bool
    top: int = 10
    html: str | None = None  # report: also write the HTML report here
    queries: list[str] = field(default_factory=list)
    destinations: list[Destination] = field(default_factory=list)
    format: str = "table"
    max_rows: int = DEFAULT_MAX_ROWS


def parse_command(argv: list[str] | None) -> Command:
    args = build_parser().parse_args(argv)
    options = {"ports": args.ports, **({"specs": args.specs} if args.specs else {})}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {item!r}: write KEY=VALUE, e.g. --option mode=FAILFAST")
        if key.lower() == "view":
            raise UsageError(f"--option view: the command registers every view, {VIEW_LIST}: name one in the query")
        options[key] = value
    common = dict(
        options=options,
        master=args.master,
        verbose=args.verbose,
        progress=not args.no_progress and not args.verbose and sys.stderr.isatty(),
    )
    if args.command == "report":
        if args.top < 1:
            raise UsageError("--top must be 1 or more")
        if args.html is not None:
            _check_writable(args.html)
        return Command("report", args.paths, top=args.top, html=args.html, format=args.format, **common)
    if args.max_rows < 0:
        raise UsageError("--max-rows must be 0 (all) or more")
    if args.command == "shell":
        return Command("shell", args.paths, format=args.format or "table", max_rows=args.max_rows, **common)
    paths, queries = split_paths_and_queries(args.args)
    if args.output and len(args.output) != len(queries):
        raise UsageError(
            f"{len(queries)} quer{'y' if len(queries) == 1 else 'ies'} and {len(args.output)} "
            f"--output: give one --output per query, or none"
        )
    try:
        destinations = [
            destination_for(args.output[i] if args.output else None, args.format) for i in range(len(queries))
        ]
    except ValueError as e:
        raise UsageError(str(e)) from e
    return Command(
        "sql",
        paths,
        queries=queries,
        destinations=destinations,
        format=args.format or "table",
        max_rows=args.max_rows,
        **common,
    )


def _check_writable(path: str) -> None:
    """Said before Spark starts, not after the whole report was printed."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"--html {path}: is a directory; name the file to write")
    if not os.path.isdir(folder):
        raise UsageError(f"--html {path}: no directory {folder}")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--html {path}: cannot write in {folder}")


def split_paths_and_queries(args: list[str]) -> tuple[list[str], list[str]]:
    """Paths first, then queries: the first argument that reads as a query starts them (see
    ``_looks_like_query``); with none, the last argument is the query."""
    for i, arg in enumerate(args):
        if _looks_like_query(arg):
            paths, queries = args[:i], args[i:]
            break
    else:
        paths, queries = args[:-1], args[-1:]
    if not paths or not queries:
        raise UsageError(
            "sql needs one or more paths, then one or more queries: "
            'kafka-wire sql capture.pcap "SELECT api_name, count(*) FROM exchanges GROUP BY 1"'
        )
    for query in queries:
        if _is_path(query):
            raise UsageError(f"{query!r} is a path after a query: give the paths first, then the queries")
    return paths, queries


# The first words of the statements a query starts with (Spark SQL's, and a parenthesis).
_STATEMENTS = frozenset(
    "select with from values table show describe desc explain cache uncache clear refresh set reset "
    "create drop alter insert use list analyze merge update delete truncate add (".split()
)


# How capture files' names end: a short argument ending so is a path, mistyped or not ("table
# 1.pcap"); a query's words run longer ("SELECT * FROM exchanges ORDER BY e.cap").
_CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".gz")  # (.gz: tcpdump -z gzip)
_MAX_PATH_WORDS = 3


def _looks_like_query(arg: str) -> bool:
    """A statement's first word (or a comment) that names no file: a path with a space in it, a
    glob of such paths, or a path mistyped, is a path, and its error names it."""
    text = arg.strip()
    if _is_path(arg) or _named_like_a_capture(text):
        return False
    words = text.replace("(", "( ").split()
    return text.startswith(("--", "/*")) or (bool(words) and words[0].lower() in _STATEMENTS)


def _named_like_a_capture(text: str) -> bool:
    return (
        text.lower().endswith(_CAPTURE_SUFFIXES)
        and len(text.split()) <= _MAX_PATH_WORDS
        and not any(mark in text for mark in ("\n", "--", "/*"))
    )


def _is_path(arg: str) -> bool:
    return os.path.exists(arg) or bool(glob.glob(arg))
