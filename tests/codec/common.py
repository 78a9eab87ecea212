"""``common()``: the one-call check every construct of ours must pass (after construct's own
test helper of that name): interpreted and compiled parsing give the expected value and use
every byte, and every truncation of the input is a ``WireError``, not a wrong value."""

from io import BytesIO

import pytest

from kafka_protocol_source.codec.errors import WireError


def parse_both(construct, data: bytes):
    io = BytesIO(data)
    interpreted = construct._parse(io, None, "")
    used_interpreted = io.tell()
    io = BytesIO(data)
    compiled = construct.compile().parsefunc(io, None)
    assert used_interpreted == io.tell(), "compiled and interpreted used different byte counts"
    return interpreted, compiled, used_interpreted


def decode_both(parser, data: bytes):
    """A cached ``Parser``'s compiled and interpreted parses agree and use every byte."""
    io = BytesIO(data)
    compiled = parser.parse_compiled(io)
    assert io.tell() == len(data)
    io = BytesIO(data)
    assert parser.interpreted._parse(io, None, "") == compiled
    assert io.tell() == len(data)
    return compiled


def common(construct, data: bytes, expected) -> None:
    interpreted, compiled, used = parse_both(construct, data)
    assert interpreted == expected
    assert compiled == expected
    assert used == len(data)
    for cut in range(len(data)):
        with pytest.raises(WireError):
            construct._parse(BytesIO(data[:cut]), None, "")
        # compiled code raises whatever its inlined reads hit (struct.error, a WireError, ...);
        # the decoder re-reads interpreted to say where, so only "it raises" matters here
        with pytest.raises(Exception):  # noqa: B017
            construct.compile().parsefunc(BytesIO(data[:cut]), None)
