"""From paired frames to one ``Exchange``: times, latency, sizes, stream spans, api name and notes.

Owns how a row describes what pairing decided (which frames, which status, which error): the
columns filled from the header or the decoded request, the note joined from what decoding said,
and the bytes of each stream the exchange holds. Does not own pairing itself (``pairing``).
"""

from __future__ import annotations

from .model import CUT_BODY, OK, Exchange, Frame, new_exchange
from .quirks import explain
from .sniff import RequestHeader
from .splitter import Partial


def build_exchange(
    ctx,
    ids: tuple[str, str | None, str | None],
    filtering: bool,
    status: str,
    frame,
    decoded: dict | None,
    *,
    response_frame=None,
    response: dict | None = None,
    error: str | None = None,
    note: str | None = None,
    raw_request=None,
    raw_response=None,
    header: RequestHeader | None = None,
    correlation_id=None,
    request_size=None,
    response_size=None,
    request_span=None,
    response_span=None,
    completed_at: int | None = None,
) -> Exchange | None:
    """The exchange of a request frame and its response (either may be None), as the row says it;
    None when ``filtering`` and the context does not want it (its api or its time).
    ``completed_at``: see ``Exchange`` (the pairer knows what decided the row)."""
    connection_id, client, broker = ids
    api_key: int | None
    api_version: int | None
    client_id: str | None
    if header is not None:
        api_key, api_version, corr, client_id = (
            header.api_key,
            header.api_version,
            header.correlation_id,
            header.client_id,
        )
    elif decoded is not None:
        api_key, api_version, corr, client_id = (
            decoded["api_key"],
            decoded["api_version"],
            decoded["correlation_id"],
            decoded.get("client_id"),
        )
    else:
        api_key = api_version = client_id = None
        corr = correlation_id
    start_ns = getattr(frame, "first_ns", None)
    if filtering and not ctx.wanted(api_key, start_ns, status):
        return None
    # The response's end: a whole frame's last packet, or that of one the capture cut where the
    # packet that carried its last byte is there (a snaplen cut); else, for response_time, its start.
    ended_ns = getattr(response_frame, "last_ns", None)
    end_ns = ended_ns or getattr(response_frame, "first_ns", None)
    # A time of 0 is unknown (see CaptureContext.time), so a latency from it would be invented; an
    # answer captured before its request (clocks that disagree) has none either.
    latency = (ended_ns - start_ns) / 1e6 if start_ns and ended_ns and ended_ns >= start_ns else None
    if (
        _remarkable(decoded)
        or _remarkable(response)
        or (note is not None and (decoded is not None or response is not None))
    ):
        note = notes(
            note,
            decoded,
            response,
            {"note": explain(api_key, api_version, "request", decoded)},
            {"note": explain(api_key, api_version, "response", response)},
        )
    request_packet = getattr(frame, "first_packet", None)
    response_packet = getattr(response_frame, "first_packet", None)
    capture_file, request_packet = ctx.locate(request_packet)
    response_file, response_packet = ctx.locate(response_packet)
    if frame is None:
        capture_file = response_file  # the file where the exchange started
    elsewhere = response_file if response_frame is not None and response_file != capture_file else None
    return new_exchange(
        capture_file=capture_file,
        connection_id=connection_id,
        client_address=client,
        broker_address=broker,
        request_time=ctx.time(start_ns),
        response_time=ctx.time(end_ns),
        latency_ms=latency,
        api_key=api_key,
        api_name=api_name(ctx, api_key),
        api_version=api_version,
        correlation_id=corr,
        client_id=client_id,
        request_size=request_size if request_size is not None else _frame_size(frame),
        response_size=response_size if response_size is not None else _frame_size(response_frame),
        request=decoded["body"] if decoded else None,
        response=response["body"] if response else None,
        status=status,
        error=error,
        note=note,
        raw_request=raw_request,
        raw_response=raw_response,
        request_packet=request_packet,
        response_packet=response_packet,
        completed_at=completed_at,
        stream_offset=getattr(frame, "offset", None) if frame is not None else getattr(response_frame, "offset", None),
        request_span=request_span or stream_span(frame),
        response_span=response_span or stream_span(response_frame),
        response_file=elsewhere,
    )


def answered(
    ctx,
    ids: tuple[str, str | None, str | None],
    frame: Frame,
    decoded: dict,
    response_frame: Frame,
    response: dict,
    completed_at: int | None = None,
) -> Exchange:
    """``build_exchange`` of the usual row, built without its general cases: an ``ok`` exchange of
    two whole frames, both decoded with nothing to note, read without filters."""
    if _remarkable(decoded) or _remarkable(response):
        row = build_exchange(
            ctx,
            ids,
            False,
            OK,
            frame,
            decoded,
            response_frame=response_frame,
            response=response,
            completed_at=completed_at,
        )
        assert row is not None, "only a filtering read leaves a row out"
        return row
    api_key = decoded["api_key"]
    start_ns, end_ns = frame.first_ns, response_frame.last_ns
    capture_file, request_packet = ctx.locate(frame.first_packet)
    response_file, response_packet = ctx.locate(response_frame.first_packet)
    request_size, response_size = len(frame.payload) + 4, len(response_frame.payload) + 4
    time = ctx.time
    return new_exchange(
        capture_file,
        ids[0],
        ids[1],
        ids[2],
        time(start_ns),
        time(end_ns),
        (end_ns - start_ns) / 1e6 if start_ns and end_ns and end_ns >= start_ns else None,
        api_key,
        api_name(ctx, api_key),
        decoded["api_version"],
        decoded["correlation_id"],
        decoded.get("client_id"),
        request_size,
        response_size,
        decoded["body"],
        response["body"],
        OK,
        None,
        None,
        None,
        None,
        request_packet,
        response_packet,
        frame.offset,
        (frame.offset, request_size),
        (response_frame.offset, response_size),
        completed_at,
        response_file if response_file != capture_file else None,
    )


def api_name(ctx, api_key: int | None) -> str | None:
    if api_key is None:
        return None
    return ctx.decoder.api_name(api_key) or (ctx.bundled_names or {}).get(api_key)


def _remarkable(decoded: dict | None) -> bool:
    """Whether a decoded frame has anything for the row's note (a note of its own, or a known quirk)."""
    return decoded is not None and ("note" in decoded or "trailing_bytes" in decoded or "deviations" in decoded)


def notes(note: str | None, *decoded: dict | None) -> str | None:
    """Join an exchange's note with what decoding had to say (fallbacks, ignored trailing bytes)."""
    said = [note] if note else []
    for d in decoded:
        if d is not None and d.get("note"):
            said.append(d["note"])
    return "; ".join(dict.fromkeys(said)) or None


def _frame_size(frame) -> int | None:
    if frame is None:
        return None
    if isinstance(frame, Partial):
        return (frame.claimed_size + 4) if frame.claimed_size is not None else len(frame.payload)
    return len(frame.payload) + 4


def stream_span(frame) -> tuple[int, int] | None:
    """The stream bytes a frame (or the part of one that was captured) covers."""
    if frame is None:
        return None
    if isinstance(frame, Partial):
        if frame.span is not None:
            return frame.offset, frame.span
        return frame.offset, len(frame.payload) + (4 if frame.claimed_size is not None else 0)
    return frame.offset, len(frame.payload) + 4


def read_up_to(missing: str, decoded: dict | None, side: str) -> str:
    """What a cut frame's row says: what is missing, and how far its body was read."""
    if decoded is None:
        return missing
    if decoded["cut_at"] is None:
        return f"{missing}; the {side}'s body reads whole (the cut was in bytes after it)"
    return f"{missing}; {CUT_BODY.format(side=side)}, in {decoded['cut_at']}"


def unknown_api_error(ctx, header: RequestHeader) -> str:
    """What the row of a request of an api or version the definitions lack says."""
    name = api_name(ctx, header.api_key)
    if ctx.decoder.api_name(header.api_key) is None:
        what = f"{name} (api key {header.api_key})" if name else f"api key {header.api_key}"
    else:
        what = f"{name} version {header.api_version}"
    source = ctx.decoder.source or "the definitions in use"
    return f"{what} is not in {source}: paired by correlation id, bodies kept raw"


def deviation_error(side: str, decoded: dict) -> str:
    """What a peer did that the spec does not allow and clients accept: said, with the body kept."""
    said = [f"{decoded['trailing_bytes']} bytes left after the {side} body"] if decoded.get("trailing_bytes") else []
    said += [f"{side} {d}" for d in decoded.get("deviations", ())]
    return f"{'; '.join(said)}: the frame does not match the spec (the body as decoded is kept)"
