"""Wire-level readers shared by the interpreted and the compiled parsers.

Every Kafka primitive with a length or a varint is read by one function here. The construct
classes in ``constructs.py`` call these from ``_parse`` and emit calls to them from
``_emitparse``, so compiled and interpreted parsing run the very same reading code.

A claimed length is checked against the bytes left before anything is sized by it: strings and
bytes are read with ``io.read(n)`` (which never returns more than is there, so it allocates no
more than the bytes present) and then checked; array counts are checked against the bytes left
before a single element is built.
"""

from __future__ import annotations

import struct
import threading

from .errors import Truncated, WireError


class _Prefix(threading.local):
    """Set while a frame the capture cut is read up to the cut (``codec.prefix``), per thread."""

    reading = False


PREFIX = _Prefix()
_I8 = struct.Struct(">b").unpack
_I16 = struct.Struct(">h").unpack
_I32 = struct.Struct(">i").unpack
_I64 = struct.Struct(">q").unpack
_U16 = struct.Struct(">H").unpack
_U32 = struct.Struct(">I").unpack
_F64 = struct.Struct(">d").unpack


def remaining(io) -> int:
    pos = io.tell()
    end = io.seek(0, 2)
    io.seek(pos)
    return end - pos


def read_exact(io, n: int, what: str = "bytes") -> bytes:
    data = io.read(n)
    if len(data) != n:
        raise Truncated(f"{what}: needs {n} bytes, {len(data)} left", io.tell() - len(data))
    return data


def _fixed(unpack, size: int, what: str):
    def read(io):
        data = io.read(size)
        if len(data) != size:
            raise Truncated(f"{what}: needs {size} bytes, {len(data)} left", io.tell() - len(data))
        return unpack(data)[0]

    read.__name__ = f"read_{what}"
    return read


read_int8 = _fixed(_I8, 1, "int8")
read_int16 = _fixed(_I16, 2, "int16")
read_int32 = _fixed(_I32, 4, "int32")
read_int64 = _fixed(_I64, 8, "int64")
read_uint16 = _fixed(_U16, 2, "uint16")
read_uint32 = _fixed(_U32, 4, "uint32")
read_float64 = _fixed(_F64, 8, "float64")


def read_bool(io) -> bool:
    data = io.read(1)
    if not data:
        raise Truncated("bool: needs 1 byte, 0 left", io.tell())
    return data != b"\x00"


def read_uvarint(io, max_bytes: int = 5) -> int:
    """Unsigned LEB128 varint (KIP-482 lengths and tags); at most 5 bytes for 32 bits."""
    b = io.read(1)
    if b and b[0] < 0x80:  # one byte: almost every length and count
        return b[0]
    start = io.tell() - len(b)
    if not b:
        raise Truncated("varint: stream ended inside a varint", start)
    result, shift = b[0] & 0x7F, 7
    for _ in range(max_bytes - 1):
        b = io.read(1)
        if not b:
            raise Truncated("varint: stream ended inside a varint", start)
        byte = b[0]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result
        shift += 7
    raise WireError(f"varint: longer than {max_bytes} bytes", start)


def read_varint(io) -> int:
    """Zigzag signed 32-bit varint (record-level fields): 1 to 5 bytes."""
    return _zigzag(io, 5, 32, "varint")


def read_varlong(io) -> int:
    """Zigzag signed 64-bit varint: 1 to 10 bytes."""
    return _zigzag(io, 10, 64, "varlong")


def _zigzag(io, max_bytes: int, bits: int, what: str) -> int:
    start = io.tell()
    n = read_uvarint(io, max_bytes)
    if n >> bits:
        # Java's readVarint drops these bits; a value no int32/int64 can hold is corrupt data.
        raise WireError(f"{what}: value does not fit in {bits} bits", start)
    return (n >> 1) ^ -(n & 1)


def read_uuid(io) -> str:
    h = read_exact(io, 16, "uuid").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _text(data: bytes) -> str:
    # Java's String(bytes, UTF_8), which Kafka uses, replaces bad sequences; so do we.
    return data.decode("utf-8", "replace")


def _read_sized(io, n: int, what: str, start: int) -> bytes:
    data = io.read(n)
    if len(data) != n:
        raise Truncated(f"{what}: claimed length {n} but only {len(data)} bytes left", start)
    return data


def _sized_or_null(io, n: int, start: int, nullable: bool, what: str) -> bytes | None:
    """The ``n`` bytes after a length read at ``start``: -1 is null where ``nullable``."""
    if n < 0:
        if nullable and n == -1:
            return None
        raise WireError(f"{what}: {'null where not nullable' if n == -1 else f'negative length {n}'}", start)
    return _read_sized(io, n, what, start)


def _text_or_null(data: bytes | None) -> str | None:
    return None if data is None else _text(data)


def read_string(io, nullable: bool) -> str | None:
    start = io.tell()
    return _text_or_null(_sized_or_null(io, read_int16(io), start, nullable, "string"))


def read_compact_string(io, nullable: bool) -> str | None:
    start = io.tell()
    return _text_or_null(_sized_or_null(io, read_uvarint(io) - 1, start, nullable, "compact string"))


def read_bytes(io, nullable: bool) -> bytes | None:
    start = io.tell()
    return _sized_or_null(io, read_int32(io), start, nullable, "bytes")


def read_compact_bytes(io, nullable: bool) -> bytes | None:
    start = io.tell()
    return _sized_or_null(io, read_uvarint(io) - 1, start, nullable, "compact bytes")


def read_varint_string(io, nullable: bool) -> str | None:
    """Zigzag varint length (-1: null) then UTF-8, as in record header keys; never compact."""
    start = io.tell()
    return _text_or_null(_sized_or_null(io, read_varint(io), start, nullable, "varint string"))


def read_varint_bytes(io, nullable: bool) -> bytes | None:
    start = io.tell()
    return _sized_or_null(io, read_varint(io), start, nullable, "varint bytes")


def read_sized_by(io, source_value: int, source: str, minus: int) -> bytes:
    """krammar's ``length-field-minus``: bytes sized by an earlier field's value less ``minus``."""
    n = source_value - minus
    if n < 0:
        raise WireError(
            f"bytes sized by {source} - {minus}: {source} is {source_value}, so the length is {n}", io.tell()
        )
    return _read_sized(io, n, f"bytes sized by {source} - {minus}", io.tell())


def read_array_count(io, nullable: bool, compact: bool, min_element_size: int) -> int | None:
    """Element count of an array, or None for a null array; checked against the bytes left."""
    start = io.tell()
    n = read_uvarint(io) - 1 if compact else read_int32(io)
    return _checked_count(io, n, start, nullable, min_element_size)


def read_varint_array_count(io, nullable: bool, min_element_size: int) -> int | None:
    """krammar's ``varint[T]``: the count is a zigzag varint, -1 for null, even when flexible."""
    start = io.tell()
    return _checked_count(io, read_varint(io), start, nullable, min_element_size)


def _checked_count(io, n: int, start: int, nullable: bool, min_element_size: int) -> int | None:
    if n < 0:
        if nullable and n == -1:
            return None
        raise WireError(f"array: {'null' if n == -1 else f'negative count {n}'} where not nullable", start)
    # Every element takes at least one byte, so a count beyond the bytes left is a lie; not so in
    # a frame the capture cut, whose elements are read while bytes last (``PREFIX``).
    if n > 32 and n * max(min_element_size, 1) > remaining(io) and not PREFIX.reading:
        io.seek(start)
        raise Truncated(f"array: claimed {n} elements but only {remaining(io)} bytes left", start)
    return n


def read_struct_marker(io, tagged: bool) -> bool:
    """KIP-893: True if a nullable struct is present. int8 -1/1, or uvarint 0/1 when tagged."""
    start = io.tell()
    if tagged:
        marker = read_uvarint(io)
        if marker not in (0, 1):
            raise WireError(f"nullable struct: marker {marker} is neither 0 nor 1", start)
        return marker == 1
    marker = read_int8(io)
    if marker not in (-1, 1):
        raise WireError(f"nullable struct: marker {marker} is neither -1 nor 1", start)
    return marker == 1


def copy_default(value):
    """Defaults may be dicts or lists shared by every parse: hand out fresh copies."""
    if isinstance(value, dict):
        return {k: copy_default(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_default(v) for v in value]
    return value


def read_tag_section(io, result: dict, known: dict, defaults: tuple) -> None:
    """KIP-482 tag section: uvarint count, then (uvarint tag, uvarint size, value) each.

    ``known`` maps tag -> (name, parse); known values are parsed in place and must use exactly
    their declared size. Unknown tags are kept as raw bytes under ``unknown_tagged_fields``.
    ``defaults`` lists (name, value) of every known tagged field, applied when it is absent.
    """
    count_at = io.tell()
    count = read_uvarint(io)
    if count == 0:  # the usual case: nothing tagged was sent
        for name, default in defaults:
            result[name] = copy_default(default)
        return
    if count > remaining(io):
        raise Truncated(f"tag section: claims {count} fields but only {remaining(io)} bytes left", count_at)
    unknown = None
    for _ in range(count):
        tag_at = io.tell()
        tag = read_uvarint(io)
        size = read_uvarint(io)
        entry = known.get(tag)
        if entry is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = _read_sized(io, size, f"tagged field {tag}", tag_at)
            continue
        name, parse = entry
        if size > remaining(io):
            raise Truncated(f"tagged field {tag}: claimed size {size} but only {remaining(io)} bytes left", tag_at)
        end = io.tell() + size
        try:
            result[name] = parse(io)
        except WireError as e:
            e.within(name)
            raise
        if io.tell() != end:
            raise WireError(
                f"tagged field {tag} ({name}): value used {io.tell() - end + size} of its {size} bytes", tag_at
            ).within(name)
    for name, default in defaults:
        if name not in result:
            result[name] = copy_default(default)
    if unknown:
        result["unknown_tagged_fields"] = unknown


class RecordsBytes(bytes):
    """The bytes of a ``records`` field, left for the records stage to decode after the body."""


def read_records(io, nullable: bool, compact: bool):
    """A ``records`` field: sized bytes holding message sets or record batches (decoded later)."""
    data = read_compact_bytes(io, nullable) if compact else read_bytes(io, nullable)
    return None if data is None else RecordsBytes(data)
