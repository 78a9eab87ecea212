"""Control records: the key/value pairs of batches with the control attribute set.

Owns the control record key (int16 version, int16 type, ControlRecordType.java), the type
names, and the EndTransactionMarker value of ABORT/COMMIT (KIP-98). The KRaft types
(LEADER_CHANGE, SNAPSHOT_HEADER/FOOTER, KRAFT_VERSION, KRAFT_VOTERS; KIP-595, KIP-630,
KIP-853) carry version-prefixed data messages whose layout belongs to the spec stage, so
their value goes to the caller's `decode_control` callback. Does not walk batches.
"""

import struct
from collections.abc import Callable

CONTROL_TYPE_NAMES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

_KEY = struct.Struct(">hh")
_END_TXN_MARKER = struct.Struct(">hi")

ControlDecoder = Callable[[int, bytes], dict | None]  # None: the definitions lack that control type


def decode_control_record(key: bytes | None, value: bytes | None, decode_control: ControlDecoder | None) -> dict:
    """Return the `control` dict of one record of a control batch."""
    if key is None or len(key) < _KEY.size:
        return _control(-1, -1, None, "control record key shorter than 4 bytes")
    version, type_id = _KEY.unpack_from(key)
    if type_id in (0, 1):
        return _control(type_id, version, *_end_txn_marker(value))
    if type_id not in CONTROL_TYPE_NAMES:
        return _control(type_id, version, None, f"unknown control record type {type_id}")
    if decode_control is None or value is None:
        return _control(type_id, version, None, None)
    try:
        data = decode_control(type_id, value)
    except Exception as e:  # noqa: BLE001 - errors are data: a bad record becomes a column
        return _control(type_id, version, None, f"decode_control failed: {type(e).__name__}: {e}")
    return _control(type_id, version, data, None)


def _end_txn_marker(value: bytes | None) -> tuple[dict | None, str | None]:
    if value is None or len(value) < _END_TXN_MARKER.size:
        return None, "end transaction marker value shorter than 6 bytes"
    version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
    return {"version": version, "coordinator_epoch": coordinator_epoch}, None


def _control(type_id: int, version: int, data: dict | None, error: str | None) -> dict:
    return {
        "type": type_id,
        "type_name": CONTROL_TYPE_NAMES.get(type_id, "UNKNOWN"),
        "version": version,
        "data": data,
        "error": error,
    }
