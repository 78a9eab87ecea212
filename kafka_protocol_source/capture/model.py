"""Values the capture stage hands to the next stage: TCP segments and capture issues.

Owns: the shape of what `read_packets` yields and the one exception it raises.
Does not own: parsing (see the readers and `decode`), or any notion of streams (see `tcp/`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any, NamedTuple, TypeVar, cast

_T = TypeVar("_T")

# Times from here on (2200-01-01T00:00:00Z), or before 1970, are not times but broken scaling.
LATEST_TIMESTAMP_NS = 7_258_118_400 * 1_000_000_000

# The TCP flag bits the stages read.
FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10


class CaptureError(Exception):
    """The input is not a capture we can read at all (cannot be opened, or unknown magic).

    Problems found after reading has started are yielded as `CaptureIssue` instead, so one bad
    record never costs the packets before it.
    """


class KnownOtherFormat(CaptureError):
    """The input is a file of a known kind that is no capture (compressed as we do not read, an
    archive): not a stream dump either, whatever its first bytes would read as."""


# A session of several files is read as one capture: a packet's index there is its file's number
# shifted by FILE_SHIFT, plus its index in its file.
FILE_SHIFT = 40
FILE_MASK = (1 << FILE_SHIFT) - 1


def packet_number(index: int) -> int:
    """A packet's number in messages: its index in its file plus one, as Wireshark and tshark
    number frames (``frame.number``), so that a row's packet is found there as it is said."""
    return index + 1


def later_packet(packet: int, ns: int | None, than: int, than_ns: int | None) -> bool:
    """Whether ``packet`` (captured at ``ns``) came after packet ``than``: by their order within
    one file, and by capture time between files (files taken at once in several places are
    numbered by their place in the read, not in time); by number where a time is missing or equal."""
    if packet >> FILE_SHIFT != than >> FILE_SHIFT and ns and than_ns and ns != than_ns:
        return ns > than_ns
    return packet > than


class TcpSegment(NamedTuple):
    """One TCP segment as seen on the wire (a named tuple: made for every packet, and a tuple is
    built in one step where a frozen dataclass sets its fields one by one).

    `payload` holds the bytes present in the capture; `missing` counts payload bytes that the IP
    length says were sent but that the capture cut off (snaplen or a truncated file).
    `timestamp_ns` is nanoseconds since the epoch, below `LATEST_TIMESTAMP_NS`; 0 when unknown (a
    pcapng SPB has none; a time outside 1970..2200 is reported as a bad_timestamp issue).
    """

    timestamp_ns: int
    src_ip: str
    src_port: int
    dst_ip: str
    dst_port: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int
    packet_index: int
    file_offset: int


@dataclass(frozen=True, slots=True)
class CaptureIssue:
    """Something in the capture we could not use, reported in place of the packet.

    kind is one of: truncated_file, corrupt_file, read_error (the file could not be read on),
    bad_timestamp (an interface's times fall outside 1970..2200), snaplen_cut, bad_ip_header,
    bad_tcp_header, fragment_incomplete, fragment_truncated, unsupported_linktype.
    """

    packet_index: int
    file_offset: int
    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class CaptureFormat:
    """What `detect_format` found: the container ("pcap" or "pcapng") and whether it is gzipped."""

    container: str
    gzipped: bool


def fast_constructor(cls: type[_T]) -> Callable[..., _T]:
    """Return a constructor for a frozen, slotted dataclass that skips its __init__.

    A frozen dataclass's generated __init__ goes through object.__setattr__ once per field.
    Here the object is made as an instance of a plain twin class with the same slots, whose
    fields are set as ordinary attributes, and then given its class: 0.46 us against 1.44 for
    the 27 fields of an exchange, where setting the slot descriptors one call each took 1.44
    and the frozen __init__ about three times that. (A class whose layout the twin cannot
    match gets the descriptor calls.) It serves the frames and exchanges, which stay
    dataclasses (what is made for every packet is a named tuple instead, built in one step).
    Arguments are taken as by the class (by position or by name, with the fields' defaults,
    which must be immutable: no default_factory). Values are not checked, so only the stage
    that owns the class should use it.
    """
    params = []
    spec = fields(cast(Any, cls))
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls}  # exec's namespace
    for i, f in enumerate(spec):
        if f.default is not MISSING:
            env[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
        elif f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: a default_factory cannot be shared by a fast constructor")
        else:
            params.append(f.name)
    names = [f.name for f in spec]
    twin = type(f"_{cls.__name__}Fields", (), {"__slots__": cls.__dict__.get("__slots__", ())})
    try:
        cast(Any, object.__new__(twin)).__class__ = cls
    except TypeError:  # not the same layout: set each slot through the class's descriptors
        body = "".join(f"    _s{i}(o, {n})\n" for i, n in enumerate(names))
        env.update({f"_s{i}": getattr(cls, n).__set__ for i, n in enumerate(names)})
        source = f"def make({', '.join(params)}):\n    o = _new(_cls)\n{body}    return o\n"
    else:
        env["_twin"] = twin
        body = "".join(f"    o.{n} = {n}\n" for n in names)
        source = f"def make({', '.join(params)}):\n    o = _new(_twin)\n{body}    o.__class__ = _cls\n    return o\n"
    exec(source, env)  # noqa: S102 - generated from field names only
    make = env["make"]
    make.__doc__ = f"Build a {cls.__name__} without its frozen __init__."
    return make
