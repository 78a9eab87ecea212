"""Hostile frames, one per (seed, index): what ``decode_request`` / ``decode_response`` get.

Owns the families of frame inputs and their mix:

* ``catalog``: the first indices of every campaign run a fixed list that must always be
  covered: a valid header with an empty and a random body for every api key and version the
  registry knows (both directions), nested EnvelopeRequests, nested legacy wrappers, and
  compression bombs (every codec, zeros and minimal records, one partition and many);
* ``real``: a frame cut from the sample captures, mutated (`mutate`);
* ``real_swap``: a real frame read as another api key or version (valid and invalid ones);
* ``spec`` / ``spec_mutated``: a well-formed frame of a random api and version written from
  the spec (`specgen`), as is or mutated;
* ``random_body``: a valid header followed by random bytes;
* ``records``: Produce / Fetch / ShareFetch frames whose records are mutated;
* ``bomb``: now and then, a bomb with random codec, size and partition count.

Does not run anything (see `targets`).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from functools import lru_cache

from kafka_protocol_source.codec.decoder import decoder_for

from . import corpus, mutate, recordgen, specgen

ENVELOPE = 58
JOIN_GROUP, SYNC_GROUP = 11, 14
PRODUCE, FETCH, SHARE_FETCH = 0, 1, 78
INVALID_API_KEYS = (-1, -32768, 32767, 88, 200, 1000)
INVALID_VERSIONS = (-1, -32768, 32767, 99)


@dataclass(frozen=True)
class FrameCase:
    family: str
    direction: str  # "request" or "response"
    payload: bytes
    api_key: int | None = None  # responses: what the request said
    api_version: int | None = None
    lenient: bool = False
    request_payload: bytes | None = None  # responses: the request, decoded first and handed over
    protocol_type: str | None = None  # the group's protocol type, as the pipeline knows it from JoinGroup
    cold: bool = False  # decode with a decoder that has built no parser yet, as a fresh process does
    notes: tuple[str, ...] = field(default=())

    @property
    def size(self) -> int:
        return len(self.payload) + len(self.request_payload or b"")

    def meta(self) -> dict:
        return {
            "family": self.family,
            "direction": self.direction,
            "api_key": self.api_key,
            "api_version": self.api_version,
            "lenient": self.lenient,
            "notes": list(self.notes),
            "protocol_type": self.protocol_type,
            "cold": self.cold,
            "has_request_payload": self.request_payload is not None,
        }


def registry():
    return decoder_for().registry


@lru_cache(maxsize=1)
def api_versions() -> tuple[tuple[int, int], ...]:
    return tuple(specgen.every_api_version(registry()))


# -- building blocks -------------------------------------------------------------------------


def _compact_bytes(data: bytes | None) -> bytes:
    return b"\x00" if data is None else recordgen.uvarint(len(data) + 1) + data


def envelope(inner: bytes, correlation: int = 1) -> bytes:
    """An EnvelopeRequest v0 (flexible: header v2) whose request_data is ``inner``."""
    header = struct.pack(">hhih", ENVELOPE, 0, correlation, 5) + b"admin" + b"\x00"
    return header + _compact_bytes(inner) + _compact_bytes(b"\x00\x00") + _compact_bytes(b"\x7f\x00\x00\x01") + b"\x00"


def nested_envelope(depth: int) -> bytes:
    frame = struct.pack(">hhih", 18, 0, 7, 1) + b"c"  # ApiVersions v0, the innermost request
    for level in range(depth):
        frame = envelope(frame, level)
    return frame


def produce_with_records(record_sets: list[bytes], version: int = 9) -> bytes:
    """A Produce request (v9, flexible) with one topic and one partition per records value."""
    header = struct.pack(">hhih", PRODUCE, version, 42, 4) + b"fuzz" + b"\x00"
    body = b"\x00" + struct.pack(">hi", -1, 30000)  # null transactional id, acks, timeout
    body += recordgen.uvarint(2) + _compact_bytes(b"topic")
    body += recordgen.uvarint(len(record_sets) + 1)
    for i, records in enumerate(record_sets):
        body += struct.pack(">i", i) + _compact_bytes(records) + b"\x00"
    return header + body + b"\x00" + b"\x00"


def fetch_response_with_records(record_sets: list[bytes], version: int = 12) -> bytes:
    """A Fetch response v12 (flexible) with one topic and one partition per records value."""
    body = struct.pack(">i", 42) + b"\x00"  # correlation id, header tags
    body += struct.pack(">ihi", 0, 0, 0)  # throttle, error, session id
    body += recordgen.uvarint(2) + recordgen.uvarint(6) + b"topic" + recordgen.uvarint(len(record_sets) + 1)
    for i, records in enumerate(record_sets):
        body += struct.pack(">ihqqq", i, 0, 10, 10, 0)  # index, error, high watermark, last stable, log start
        body += recordgen.uvarint(1)  # aborted transactions: empty
        body += struct.pack(">i", -1)  # preferred read replica
        body += _compact_bytes(records) + b"\x00"
    return body + b"\x00" + b"\x00"


# -- the catalog ---------------------------------------------------------------------------

BOMB_SIZES = {
    recordgen.GZIP: (64 << 20, 300 << 20),
    recordgen.ZSTD: (64 << 20, 300 << 20, 1 << 30),
    recordgen.LZ4: (64 << 20, 200 << 20),
    recordgen.SNAPPY: (16 << 20,),
}


def bomb_specs() -> list[tuple]:
    """(codec, pattern, inflated size, partitions, magic) of every catalogued bomb."""
    specs = []
    for codec, sizes in BOMB_SIZES.items():
        for pattern in recordgen.BOMB_PATTERNS:
            for size in sizes:
                specs.append((codec, pattern, size, 1, 2))
            specs.append((codec, pattern, sizes[0], 1, 1))
    # Many partitions: each under any per-batch limit, together far over it.
    specs += [
        (recordgen.ZSTD, "zeros", 200 << 20, 16, 2),
        (recordgen.ZSTD, "records", 64 << 20, 12, 2),
        (recordgen.GZIP, "zeros", 48 << 20, 10, 2),
        (recordgen.LZ4, "zeros", 16 << 20, 12, 2),
    ]
    return specs


def bomb_case(spec: tuple, response: bool) -> FrameCase:
    codec, pattern, size, partitions, magic = spec
    sets = [recordgen.bomb_batch(codec, pattern, size, magic)] * partitions
    note = f"bomb codec={codec} pattern={pattern} inflated={size} partitions={partitions} magic={magic}"
    if response:
        return FrameCase("bomb", "response", fetch_response_with_records(sets), FETCH, 12, notes=(note,))
    return FrameCase("bomb", "request", produce_with_records(sets), PRODUCE, 9, notes=(note,))


@lru_cache(maxsize=1)
def catalog_size() -> int:
    return 4 * len(api_versions()) + 6 + 4 + 2 * len(bomb_specs())


def catalog_case(i: int) -> FrameCase:
    pairs = api_versions()
    n = len(pairs)
    rng = random.Random(f"catalog:{i}")
    if i < 4 * n:
        (key, version), kind = pairs[i % n], i // n
        if kind == 0:  # valid header, empty body
            return FrameCase("catalog", "request", struct.pack(">hhih", key, version, 1, 0), notes=("empty body",))
        if kind == 1:
            return FrameCase("catalog", "response", struct.pack(">i", 1), key, version, notes=("empty body",))
        if kind == 2:
            frame = struct.pack(">hhih", key, version, 1, 0) + rng.randbytes(rng.randrange(1, 64))
            return FrameCase("catalog", "request", frame, notes=("random body",))
        return FrameCase(
            "catalog",
            "response",
            struct.pack(">i", 1) + rng.randbytes(rng.randrange(1, 64)),
            key,
            version,
            notes=("random body",),
        )
    i -= 4 * n
    if i < 6:
        # Cold: a parser first built deep in a recursion fails otherwise than one built already.
        depth = (1, 2, 10, 100, 1000, 5000)[i]
        return FrameCase("nested", "request", nested_envelope(depth), cold=True, notes=(f"envelope depth {depth}",))
    i -= 6
    if i < 4:
        depth = (2, 10, 100, 400)[i]
        return FrameCase(
            "nested",
            "request",
            produce_with_records([recordgen.nested_legacy(depth)]),
            notes=(f"legacy wrapper depth {depth}",),
        )
    i -= 4
    specs = bomb_specs()
    return bomb_case(specs[i % len(specs)], response=i >= len(specs))


# -- random families -------------------------------------------------------------------------

FAMILIES = {
    "real": 35,
    "real_swap": 8,
    "spec": 6,
    "spec_mutated": 26,
    "random_body": 8,
    "records": 8,
    "nested": 0.5,
    "bomb": 0.05,
}


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    names = [n for n, w in weights.items() if w > 0]
    return rng.choices(names, [weights[n] for n in names])[0]


def _random_api(rng: random.Random) -> tuple[int, int]:
    return rng.choice(api_versions())


def _swap_key_version(rng: random.Random, key: int, version: int) -> tuple[int, int]:
    r = rng.random()
    if r < 0.6:
        return _random_api(rng)
    if r < 0.8:
        return key, rng.choice((*INVALID_VERSIONS, version + 1, version - 1))
    return rng.choice(INVALID_API_KEYS), version


@lru_cache(maxsize=1)
def quick_catalog() -> tuple[int, ...]:
    """The catalog for a fast run: every api and version, every nesting, one bomb per codec."""
    n = 4 * len(api_versions())
    specs = bomb_specs()
    first_of_codec = {}
    for i, (codec, pattern, _size, partitions, magic) in enumerate(specs):
        if pattern == "records" and partitions == 1 and magic == 2:
            first_of_codec.setdefault(codec, i)
    many = [i for i, spec in enumerate(specs) if spec[3] > 1][:1]
    bombs = sorted(first_of_codec.values()) + many
    return tuple(range(n + 10)) + tuple(n + 10 + i for i in bombs)


def case(seed: int, index: int, families: dict[str, float] | None = None, catalog: str = "full") -> FrameCase:
    """The frame input number ``index`` of the campaign with ``seed``.

    ``catalog``: "full" runs the whole catalog at the first indices, "quick" a part of it
    (`quick_catalog`), "none" none of it.
    """
    if catalog == "full" and index < catalog_size():
        return catalog_case(index)
    if catalog == "quick" and index < len(quick_catalog()):
        return catalog_case(quick_catalog()[index])
    rng = random.Random(f"frames:{seed}:{index}")
    family = _pick(rng, families or FAMILIES)
    return _BUILDERS[family](rng)


def _real(rng: random.Random) -> FrameCase:
    frames = corpus.real_frames()
    real = rng.choice(frames)
    donors = tuple(rng.choice(frames).payload for _ in range(2))
    payload, ops = mutate.mutate(real.payload, rng, donors=donors)
    # Group frames as the pipeline decodes them, with the protocol type, so the consumer
    # subscriptions and assignments they embed are decoded too.
    protocol = "consumer" if real.api_key in (JOIN_GROUP, SYNC_GROUP) and rng.random() < 0.7 else None
    if real.direction == "request":
        return FrameCase(
            "real", "request", payload, lenient=rng.random() < 0.2, protocol_type=protocol, notes=(real.source, *ops)
        )
    request = real.request if rng.random() < 0.7 else None
    return FrameCase(
        "real",
        "response",
        payload,
        real.api_key,
        real.api_version,
        lenient=rng.random() < 0.2,
        request_payload=request,
        protocol_type=protocol,
        notes=(real.source, *ops),
    )


def _real_swap(rng: random.Random) -> FrameCase:
    real = rng.choice(corpus.real_frames())
    key, version = _swap_key_version(rng, real.api_key, real.api_version)
    payload = real.payload
    if rng.random() < 0.3:
        payload, _ = mutate.mutate(payload, rng, rounds=1)
    if real.direction == "request":
        payload = struct.pack(">hh", key, version) + payload[4:]
        return FrameCase("real_swap", "request", payload, lenient=rng.random() < 0.2, notes=(real.source,))
    return FrameCase("real_swap", "response", payload, key, version, lenient=rng.random() < 0.2, notes=(real.source,))


def _spec_frame(rng: random.Random, key: int, version: int, direction: str) -> bytes:
    knobs = {"odd": rng.choice((0.0, 0.0, 0.2)), "fill": rng.choice((1.0, 0.7, 0.3))}
    if direction == "request":
        return specgen.request_frame(registry(), key, version, rng, **knobs)
    return specgen.response_frame(registry(), key, version, rng, **knobs)


def _spec(rng: random.Random, mutated: bool = False) -> FrameCase:
    key, version = _random_api(rng)
    direction = rng.choice(("request", "response"))
    payload = _spec_frame(rng, key, version, direction)
    ops: list[str] = []
    if mutated:
        payload, ops = mutate.mutate(payload, rng)
    family = "spec_mutated" if mutated else "spec"
    request = None
    if direction == "response" and key == ENVELOPE and rng.random() < 0.5:
        request = envelope(_spec_frame(rng, *_random_api(rng), "request"))
    if direction == "request":
        return FrameCase(family, direction, payload, lenient=rng.random() < 0.2, notes=(f"{key}v{version}", *ops))
    return FrameCase(
        family,
        direction,
        payload,
        key,
        version,
        lenient=rng.random() < 0.2,
        request_payload=request,
        notes=(f"{key}v{version}", *ops),
    )


def _random_body(rng: random.Random) -> FrameCase:
    key, version = _random_api(rng) if rng.random() < 0.9 else (rng.choice(INVALID_API_KEYS), 0)
    body = rng.randbytes(rng.choice((0, 1, 2, 4, 8, 16, 64, 256, 1024)))
    if rng.random() < 0.5:
        return FrameCase("random_body", "request", struct.pack(">hhi", key, version, rng.randrange(-5, 5)) + body)
    return FrameCase("random_body", "response", struct.pack(">i", rng.randrange(-5, 5)) + body, key, version)


def _records(rng: random.Random) -> FrameCase:
    r = rng.random()
    sets = [recordgen.random_records(rng) for _ in range(rng.randrange(1, 4))]
    if r < 0.4:
        payload, direction, key, version = produce_with_records(sets), "request", PRODUCE, 9
    elif r < 0.8:
        payload, direction, key, version = fetch_response_with_records(sets), "response", FETCH, 12
    else:
        key, version = rng.choice([kv for kv in api_versions() if kv[0] in (PRODUCE, FETCH, SHARE_FETCH)])
        direction = "request" if key == PRODUCE else "response"
        payload = _spec_frame(rng, key, version, direction)
    ops: list[str] = []
    if rng.random() < 0.7:
        # Mutate past the headers, where the records are.
        cut = min(len(payload), rng.randrange(20, 60))
        tail, ops = mutate.mutate(payload[cut:], rng)
        payload = payload[:cut] + tail
    if direction == "request":
        return FrameCase("records", "request", payload, notes=tuple(ops))
    return FrameCase("records", "response", payload, key, version, notes=tuple(ops))


def _nested(rng: random.Random) -> FrameCase:
    if rng.random() < 0.5:
        depth = rng.choice((2, 3, 50, 500, 3000))
        return FrameCase("nested", "request", nested_envelope(depth), notes=(f"envelope depth {depth}",))
    depth = rng.choice((2, 5, 50, 300))
    codec = rng.choice(recordgen.CODECS[1:])
    return FrameCase(
        "nested",
        "request",
        produce_with_records([recordgen.nested_legacy(depth, codec)]),
        notes=(f"legacy wrapper depth {depth} codec {codec}",),
    )


def _bomb(rng: random.Random) -> FrameCase:
    return bomb_case(rng.choice(bomb_specs()), response=rng.random() < 0.5)


_BUILDERS = {
    "real": _real,
    "real_swap": _real_swap,
    "spec": _spec,
    "spec_mutated": lambda rng: _spec(rng, mutated=True),
    "random_body": _random_body,
    "records": _records,
    "nested": _nested,
    "bomb": _bomb,
}


def warm() -> None:
    """Build what every case draws on (corpus, bombs), so forked workers share it."""
    corpus.real_frames()
    api_versions()
    for spec in bomb_specs():
        recordgen.bomb(spec[0], spec[1], spec[2])
