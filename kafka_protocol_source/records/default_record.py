"""The records inside a magic-2 batch (DefaultRecord.java; KIP-98, KIP-82 for headers).

Owns the record loop: varint length, int8 attributes, zigzag timestamp and offset deltas,
nullable key and value, headers. It is the stage's hot path, so it is written for the
interpreter: every varint of one or two bytes (all lengths below 8 KiB, the first 8192 offset
and millisecond deltas) is read inline through a lookup table, the one-header record is
inline too, and records are dict literals with no helper calls. Every claimed length is
checked against the bytes of its record before anything is sliced. Does not read the batch
header or know codecs (see default_batch).
"""

from .errors import RecordsError
from .varint import ZIGZAG_14, read_zigzag


class OverLimit(Exception):
    """More records than the frame's budget allows (see ``budget``)."""


def read_records(  # noqa: C901 - one inline loop: a call per field costs 5-10% each
    buf: bytes,
    pos: int,
    stop: int,
    base_offset: int,
    base_timestamp: int,
    timestamp_override: int | None,
    out: list,
    partial_ok: bool,
    limit: int = 1 << 62,
) -> None:
    """Append the records in buf[pos:stop] to `out` as dicts, until `out` holds `limit`.

    Raises RecordsError at the first corrupt record, leaving the good ones in `out`. With
    `partial_ok` a record cut by `stop` ends the loop quietly (a truncated batch). Bytes left
    once `out` holds `limit` records raise `OverLimit`.
    """
    append = out.append
    zz = ZIGZAG_14
    try:
        # A range bounds the loop by the limit: cheaper than testing len(out) every record.
        for _ in range(limit - len(out)):
            if pos >= stop:
                return
            b = buf[pos]
            if b < 0x80:
                length = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    length = zz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    length, pos = read_zigzag(buf, pos)
            rec_end = pos + length
            if rec_end > stop or length < 6:
                if partial_ok and rec_end > stop:
                    return
                raise RecordsError(f"record {len(out)} claims {length} bytes, {stop - pos} left")
            attributes = buf[pos]
            b = buf[pos + 1]
            if b < 0x80:
                timestamp_delta = zz[b]
                pos += 2
            else:
                c = buf[pos + 2]
                if c < 0x80:
                    timestamp_delta = zz[(b & 0x7F) | (c << 7)]
                    pos += 3
                else:
                    timestamp_delta, pos = read_zigzag(buf, pos + 1)
            b = buf[pos]
            if b < 0x80:
                offset_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    offset_delta = zz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    offset_delta, pos = read_zigzag(buf, pos)
            b = buf[pos]
            if b < 0x80:
                size = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    size = zz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    size, pos = read_zigzag(buf, pos)
            if 0 <= size <= rec_end - pos:
                key = buf[pos : pos + size]
                pos += size
            elif size == -1:
                key = None
            else:
                raise _bad_length(len(out), "key", size, rec_end - pos)
            b = buf[pos]
            if b < 0x80:
                size = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    size = zz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    size, pos = read_zigzag(buf, pos)
            if 0 <= size <= rec_end - pos:
                value = buf[pos : pos + size]
                pos += size
            elif size == -1:
                value = None
            else:
                raise _bad_length(len(out), "value", size, rec_end - pos)
            b = buf[pos]
            headers: list
            if b == 0:
                headers = []
                pos += 1
            elif (
                # One header (zigzag 1), the usual count after none, whose key and value lengths
                # are one byte each and fit the record; anything else, errors too, is _read_headers'.
                b == 2
                and rec_end - pos >= 3
                and (b := buf[pos + 1]) < 0x80
                and 0 <= (size := zz[b]) <= rec_end - pos - 3
                and (c := buf[pos + 2 + size]) < 0x80
                and 0 <= zz[c] <= rec_end - pos - 3 - size
            ):
                name = buf[pos + 2 : pos + 2 + size].decode("utf-8", "replace")
                pos += 3 + size
                size = zz[c]
                headers = [{"key": name, "value": buf[pos : pos + size]}]
                pos += size
            else:
                headers, pos = _read_headers(buf, pos, rec_end, len(out))
            if pos != rec_end:
                raise RecordsError(f"record {len(out)} length {length} does not match its content")
            append(
                {
                    "offset": base_offset + offset_delta,
                    "timestamp": (
                        base_timestamp + timestamp_delta if timestamp_override is None else timestamp_override
                    ),
                    "key": key,
                    "value": value,
                    "headers": headers,
                    "attributes": attributes - 256 if attributes > 127 else attributes,
                    "crc": None,
                    "crc_valid": None,
                    "control": None,
                }
            )
        if pos < stop:
            raise OverLimit(len(out))
    except IndexError as e:
        if partial_ok:
            return
        raise RecordsError(f"record {len(out)} runs past the end of the batch") from e


def _bad_length(index: int, what: str, size: int, left: int) -> RecordsError:
    """The error for a key or value length that is neither -1 (null) nor within the record."""
    if size < 0:
        return RecordsError(f"record {index} has {what} length {size}")
    return RecordsError(f"record {index} {what} claims {size} bytes, {left} left")


def _read_headers(buf: bytes, pos: int, rec_end: int, index: int) -> tuple[list, int]:
    count, pos = read_zigzag(buf, pos)
    # A header takes at least two bytes (two empty lengths): check before looping on it.
    if count < 0 or 2 * count > rec_end - pos:
        raise RecordsError(f"record {index} claims {count} headers, {rec_end - pos} bytes left")
    headers = []
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            size, pos = read_zigzag(buf, pos)
        if size < 0 or size > rec_end - pos:
            raise RecordsError(f"record {index} header key length {size} is invalid")
        name = buf[pos : pos + size].decode("utf-8", "replace")
        pos += size
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            size, pos = read_zigzag(buf, pos)
        if size < 0:
            if size != -1:
                raise RecordsError(f"record {index} header value length {size} is invalid")
            value = None
        elif size > rec_end - pos:
            raise RecordsError(f"record {index} header value claims {size} bytes")
        else:
            value = buf[pos : pos + size]
            pos += size
        headers.append({"key": name, "value": value})
    return headers, pos
