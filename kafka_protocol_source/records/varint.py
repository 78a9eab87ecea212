"""Kafka's zigzag varints read straight from a bytes object by index.

Owns the slow path of varint reading (multi-byte values) and the table the v2 record loop
reads one- and two-byte varints through inline, since a call per field is the dominant
cost there.
"""

from .errors import RecordsError

# A zigzag varlong never needs more than 10 bytes; more means corrupt data, and stopping
# there bounds the loop however the bytes are crafted.
_MAX_VARINT_BYTES = 10

# The zigzag value of every 14-bit payload, so that a one-byte varint b is ZIGZAG_14[b] and a
# two-byte one b, c is ZIGZAG_14[(b & 0x7F) | (c << 7)]: one indexing instead of five
# operations. 16384 ints, about 650 KB once per process.
ZIGZAG_14 = tuple((v >> 1) ^ -(v & 1) for v in range(1 << 14))


def read_zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    """Return (value, position after it) for the zigzag varint at `pos`.

    Raises IndexError when the bytes end inside the varint, RecordsError when it is longer
    than any Kafka varlong.
    """
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    # Two bytes (values up to +-8191) is the common multi-byte case: record lengths and
    # millisecond timestamp deltas; unrolled because this runs several times per record.
    c = buf[pos + 1]
    if c < 0x80:
        result = (b & 0x7F) | (c << 7)
        return (result >> 1) ^ -(result & 1), pos + 2
    result = (b & 0x7F) | ((c & 0x7F) << 7)
    shift = 14
    pos += 2
    stop = pos + _MAX_VARINT_BYTES - 2
    while pos < stop:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise RecordsError(f"varint longer than {_MAX_VARINT_BYTES} bytes at {pos - _MAX_VARINT_BYTES}")
