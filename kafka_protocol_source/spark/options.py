"""Options of the kafka-wire source: parsed once, validated with errors that say what to write.

Everything Spark hands over is a string (option keys are case-insensitive there); this module
turns them into a frozen ``ReadOptions``. Nothing here reads files.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass

from ..codec.decoder import decoder_for
from ..framing.context import DEFAULT_PORTS
from ..framing.splitter import DEFAULT_MAX_FRAME_SIZE
from ..records import DEFAULT_MAX_DECOMPRESSED_BYTES
from ..tcp import DEFAULT_MAX_BUFFERED_BYTES

VIEWS = ("exchanges", "records", "connections", "groups", "lag")
SUMMARY_VIEWS = ("connections", "groups", "lag")  # of whole connections and groups: every api they carry
MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
DEFAULT_SPLIT_SIZE = 32 * 1024 * 1024
MAX_SECONDS = 100 * 365 * 86400.0  # a century: longer times are typos, and overflow nanoseconds
# streaming: seconds a file may be older than the newest, an open request waits in capture time,
# and the folder stays unchanged before it is quiet
DEFAULT_MAX_FILE_AGE_S, DEFAULT_IDLE_TIMEOUT_S, DEFAULT_QUIET_TIMEOUT_S = 7 * 86400.0, 300.0, 60.0

OPTION_DOC = {
    "path": "a file, directory or glob",
    "paths": "several paths, as load([a, b]) passes them (a JSON list)",
    "view": "exchanges (default: one row per request/response), records (one row per record), connections "
    "(one per TCP connection), groups (one per consumer group generation) or lag (one per Fetch and "
    "partition)",
    "api": "typed request/response structs for one api, by name (Produce) or key (0)",
    "apiVersion": "with api: only rows of that version, with exactly that version's schema",
    "apis": "comma-separated api names or keys: decode and return only these",
    "mode": "PERMISSIVE (default), DROPMALFORMED or FAILFAST",
    "columnNameOfCorruptRecord": "column for the raw bytes of bad frames (default _corrupt_record; "
    "added when this option is set or the schema has the column)",
    "topicNames": "true: the exchanges view has topic_names, each topic id of a row's bodies with its name "
    "(typed views of apis that name topics by id always have it); rows wait for names the capture "
    "gives later, and a read may look ahead for them (see splitSize)",
    "ports": "comma-separated broker ports (default 9092)",
    "detectKafka": "true (default): also find Kafka on other ports, by a request start in a side's bytes",
    "maxFrameSize": f"largest plausible frame in bytes (default {DEFAULT_MAX_FRAME_SIZE})",
    "maxBufferedBytes": f"out-of-order bytes held per TCP direction (default {DEFAULT_MAX_BUFFERED_BYTES})",
    "maxDecompressedBytes": "what the records fields of one frame may decompress to, together "
    "(default 134217728); a frame past it says so in its row",
    "specs": "directory of Kafka JSON message definitions, or a krammar file, to decode with (default: bundled)",
    "recursiveFileLookup": "true: descend into subdirectories",
    "pathGlobFilter": "only file names matching this glob, e.g. *.pcap",
    "splitSize": "captures larger than this many bytes are read by several tasks, split by TCP connection",
    "stitch": "true (default): files of one capture session (rotated pieces, and files that overlap in time: "
    "one per interface, host or direction) are read as one capture",
    "stitchTolerance": "seconds between one file's last packet and the next one's first for them to "
    "be one session (default 60)",
    "maxFilesPerTrigger": "streaming: at most this many files with new packets per micro-batch",
    "maxBytesPerTrigger": "streaming: about this many bytes of files with new packets per micro-batch",
    "minFileAge": "streaming: seconds a new file must exist before it is read (default 0: whole "
    "packets are read as they are written)",
    "maxFileAge": "streaming: files modified this many seconds before the newest are ignored (default 604800, a week)",
    "idleTimeout": "streaming: seconds of capture time after which a request still unanswered is "
    "given up (default 300)",
    "quietTimeout": "streaming: seconds without a new packet in the folder after which the exchanges "
    "still open are emitted (default 60)",
    "progressDir": "a folder where each task reading captures writes how far it has read, twice a "
    "second (the CLI's progress line reads it)",
}


# Spark hands option keys over lower-cased: lower-case name -> the name as documented.
KNOWN_OPTIONS = {name.lower(): name for name in OPTION_DOC}


class OptionError(ValueError):
    pass


def check_option_names(names) -> None:
    """Raise for an option this source does not know (a typo is silently ignored otherwise)."""
    for name in names:
        if name.lower() not in KNOWN_OPTIONS:
            raise OptionError(unknown_option_message(name))


def unknown_option_message(name: str) -> str:
    close = difflib.get_close_matches(name.lower(), KNOWN_OPTIONS, n=1, cutoff=0.6)
    if close:
        return f"unknown option {name!r}: did you mean {KNOWN_OPTIONS[close[0]]!r}?"
    return f"unknown option {name!r} (known options: {', '.join(OPTION_DOC)})"


@dataclass(frozen=True)
class ReadOptions:
    paths: tuple[str, ...]
    view: str = "exchanges"
    api_key: int | None = None
    api_version: int | None = None
    apis: frozenset[int] | None = None
    mode: str = "PERMISSIVE"
    corrupt_column: str = "_corrupt_record"
    corrupt_requested: bool = False
    topic_names: bool = False  # the exchanges view's topic_names column (typed views: by their api)
    ports: frozenset[int] = DEFAULT_PORTS
    detect_kafka: bool = True
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES
    specs: str | None = None
    recursive: bool = False
    glob_filter: str | None = None
    split_size: int = DEFAULT_SPLIT_SIZE
    stitch: bool = True
    stitch_tolerance_ns: int = 60 * 10**9
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    progress_dir: str | None = None
    # streaming only (checked for every read: a value that is wrong fails at load(), not at start())
    max_files_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    min_file_age_ns: int = 0
    max_file_age_ns: int = int(DEFAULT_MAX_FILE_AGE_S * 1e9)
    idle_timeout_ns: int = int(DEFAULT_IDLE_TIMEOUT_S * 1e9)
    quiet_timeout_ns: int = int(DEFAULT_QUIET_TIMEOUT_S * 1e9)

    @classmethod
    def parse(cls, options) -> ReadOptions:
        opts = {k.lower(): v for k, v in dict(options).items()}
        check_option_names(dict(options))
        try:
            registry = decoder_for(opts.get("specs")).registry
        except (OSError, ValueError) as e:  # a missing path, or a definition that does not parse
            raise OptionError(f"specs: {e}") from e
        view = opts.get("view", "exchanges").lower()
        if view not in VIEWS:
            raise OptionError(f"unknown view {view!r}: use one of {', '.join(VIEWS)}")
        mode = opts.get("mode", "PERMISSIVE").upper()
        if mode not in MODES:
            raise OptionError(f"unknown mode {opts['mode']!r}: use one of {', '.join(MODES)}")
        api_key = _api(registry, opts["api"]) if "api" in opts else None
        api_version = None
        if "apiversion" in opts:
            if api_key is None:
                raise OptionError("apiVersion needs api (e.g. .option('api', 'Produce').option('apiVersion', 9))")
            api_version = _int(opts, "apiversion", 0)
            message = registry.request(api_key) or decoder_for(None).registry.request(api_key)
            assert message is not None, "_api only names api keys one of the two registries has"
            valid = message.valid_versions
            if api_version not in valid:
                raise OptionError(f"{registry.api_name(api_key)} has no version {api_version} (versions {valid})")
        if api_key is not None and view != "exchanges":
            raise OptionError(f"api gives typed exchanges; it cannot be combined with view={view}")
        if "columnnameofcorruptrecord" in opts and view != "exchanges":
            raise OptionError(
                f"columnNameOfCorruptRecord adds the raw bytes of bad frames to the exchanges view (and the "
                f"typed views); view={view} has no such column"
            )
        topic_names = _bool(opts, "topicnames", False)
        if topic_names and view != "exchanges":
            raise OptionError(
                f"topicNames adds topic_names to the exchanges view; view={view} "
                + ("names its topics in its topic column" if view == "records" else "has no such column")
            )
        apis = _apis(opts, registry, view, api_key)
        ports = frozenset(_ports(opts)) if "ports" in opts else DEFAULT_PORTS
        detect_kafka = _bool(opts, "detectkafka", True)
        if not ports and not detect_kafka:
            raise OptionError("ports names no port and detectKafka is false: no connection could be read as Kafka")
        return cls(
            paths=_paths(opts),
            view=view,
            api_key=api_key,
            api_version=api_version,
            apis=apis,
            mode=mode,
            corrupt_column=opts.get("columnnameofcorruptrecord", "_corrupt_record"),
            corrupt_requested="columnnameofcorruptrecord" in opts,
            topic_names=topic_names,
            ports=ports,
            detect_kafka=detect_kafka,
            max_frame_size=_int(opts, "maxframesize", DEFAULT_MAX_FRAME_SIZE, low=8),
            max_buffered_bytes=_int(opts, "maxbufferedbytes", DEFAULT_MAX_BUFFERED_BYTES, low=0),
            specs=opts.get("specs"),
            recursive=_bool(opts, "recursivefilelookup", False),
            glob_filter=opts.get("pathglobfilter"),
            split_size=_int(opts, "splitsize", DEFAULT_SPLIT_SIZE, low=1),
            stitch=_bool(opts, "stitch", True),
            stitch_tolerance_ns=_ns(_seconds(opts, "stitchtolerance", 60.0)),
            max_decompressed_bytes=_int(opts, "maxdecompressedbytes", DEFAULT_MAX_DECOMPRESSED_BYTES, low=1),
            progress_dir=opts.get("progressdir") or None,
            max_files_per_trigger=_int(opts, "maxfilespertrigger", 0, low=1) or None,
            max_bytes_per_trigger=_int(opts, "maxbytespertrigger", 0, low=1) or None,
            min_file_age_ns=_ns(_seconds(opts, "minfileage", 0.0)),
            max_file_age_ns=_ns(_seconds(opts, "maxfileage", DEFAULT_MAX_FILE_AGE_S)),
            idle_timeout_ns=_ns(_seconds(opts, "idletimeout", DEFAULT_IDLE_TIMEOUT_S)),
            quiet_timeout_ns=_ns(_seconds(opts, "quiettimeout", DEFAULT_QUIET_TIMEOUT_S)),
        )


def _apis(opts: dict, registry, view: str, api_key: int | None) -> frozenset[int] | None:
    """The api keys a read decodes and returns (None: all), from ``apis`` and ``api``."""
    if "apis" not in opts:
        return None if api_key is None else frozenset({api_key})
    apis = frozenset(_api(registry, a) for a in opts["apis"].split(",") if a.strip())
    if not apis:
        raise OptionError(
            f"apis names no api: write names or keys, comma-separated ('Produce,Fetch'), not {opts['apis']!r}"
        )
    if view in SUMMARY_VIEWS:
        raise OptionError(f"apis selects exchanges; view={view} summarises connections with every api they carry")
    if api_key is None:
        return apis
    if api_key not in apis:
        raise OptionError(f"api {opts['api']!r} is not among apis {opts['apis']!r}: no exchange could be read")
    return frozenset({api_key})


def _paths(opts: dict) -> tuple[str, ...]:
    paths: list[str] = []
    if "paths" in opts:
        raw = opts["paths"]
        try:
            paths += json.loads(raw) if raw.lstrip().startswith("[") else [p for p in raw.split(",") if p]
        except ValueError as e:
            raise OptionError(f"paths is not a JSON list of paths: {raw!r}") from e
    if "path" in opts:
        paths.append(opts["path"])
    if not paths:
        raise OptionError("no path given: spark.read.format('kafka-wire').load('capture.pcap')")
    return tuple(paths)


def _api(registry, text: str) -> int:
    """An api by name or key: the definitions in use first, then Kafka's own (bundled) table, so
    that an api a partial definitions file lacks still selects its exchanges (as unknown_api)."""
    text = text.strip()
    bundled = decoder_for(None).registry
    if text.lstrip("-").isdigit():
        key = int(text)
        if registry.request(key) is None and bundled.request(key) is None:
            raise OptionError(f"unknown api key {key}")
        return key
    named = registry.api_key_by_name(text)
    if named is None:
        named = bundled.api_key_by_name(text)
    if named is None:
        raise OptionError(unknown_api_message(text, [registry, bundled]))
    return named


def unknown_api_message(text: str, registries) -> str:
    names = {r.api_name(key).lower(): r.api_name(key) for r in registries for key in r.api_keys()}
    close = difflib.get_close_matches(text.lower(), names, n=3, cutoff=0.6)
    if close:
        return f"unknown api {text!r}: did you mean {' or '.join(repr(names[c]) for c in close)}?"
    return f"unknown api {text!r} (names look like Produce, Fetch, Metadata, ApiVersions)"


def _documented(key: str) -> str:
    """An option's name as documented (``apiVersion``): Spark hands the keys over lower-cased."""
    return KNOWN_OPTIONS.get(key, key)


def _seconds(opts: dict, key: str, default: float) -> float:
    if key not in opts:
        return default
    try:
        value = float(opts[key])
    except ValueError:
        raise OptionError(f"{_documented(key)} must be a number of seconds, not {opts[key]!r}") from None
    if not math.isfinite(value) or value > MAX_SECONDS:
        raise OptionError(f"{_documented(key)} must be a number of seconds up to {MAX_SECONDS:.0f}, not {opts[key]!r}")
    if value < 0:
        raise OptionError(f"{_documented(key)} must not be negative, not {opts[key]!r}")
    return value


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _int(opts: dict, key: str, default: int, low: int | None = None) -> int:
    if key not in opts:
        return default
    try:
        value = int(opts[key])
    except ValueError as e:
        raise OptionError(f"{_documented(key)} must be an integer, not {opts[key]!r}") from e
    if low is not None and value < low:
        raise OptionError(f"{_documented(key)} must be at least {low}, not {value}")
    return value


def _int_list(opts: dict, key: str) -> list[int]:
    try:
        return [int(p) for p in opts[key].split(",") if p.strip()]
    except ValueError as e:
        raise OptionError(f"{_documented(key)} must be comma-separated integers, not {opts[key]!r}") from e


def _ports(opts: dict) -> list[int]:
    ports = _int_list(opts, "ports")
    wrong = [p for p in ports if not 0 < p < 65536]
    if wrong:
        raise OptionError(f"ports must be TCP ports, 1 to 65535, not {wrong[0]}")
    return ports


def _bool(opts: dict, key: str, default: bool) -> bool:
    if key not in opts:
        return default
    value = opts[key].strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"{_documented(key)} must be true or false, not {opts[key]!r}")
    return value == "true"
