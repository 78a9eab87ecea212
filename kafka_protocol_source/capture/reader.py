"""`read_packets`: the capture stage's one entry point, wiring source → records → decoder.

Owns: choosing the record reader for the detected format, running the decoder over each frame,
and placing issues (fragment timeouts, decompression failures) in the output stream in order.
Does not own any parsing itself.
"""

from __future__ import annotations

from collections.abc import Iterator

from .decode import PacketDecoder
from .fragments import FragmentReassembler
from .model import CaptureIssue, TcpSegment
from .pcap import read_pcap_frames
from .pcapng import read_pcapng_frames
from .runs import RangeRead, RecordRuns, open_runs, remap
from .source import Source, open_capture


def read_packets(
    source: Source,
    *,
    runs: RecordRuns | None = None,
    fragment_timeout_s: float = 30.0,
    max_open_fragments: int = 1024,
) -> Iterator[TcpSegment | CaptureIssue]:
    """Yield every TCP segment in a pcap/pcapng capture (gzipped or not), in file order.

    Problems are yielded as `CaptureIssue` items where they occur. Once the magic says it is a
    capture, nothing raises: a file cut short, corrupt (compressed) data or a failing read ends
    the packets with an issue saying so, after every packet read before it. Raises
    `CaptureError` only when the input is not a capture (or cannot be opened).
    The file is read in chunks; memory stays bounded by the chunk size and the open fragments.
    With ``runs`` (from ``index.index_records``), only those records of the (uncompressed) file
    are read, with the packet indices and offsets they have in the whole file.
    """
    fragments = FragmentReassembler(int(fragment_timeout_s * 1e9), max_open_fragments)
    decode = PacketDecoder(fragments).decode
    issues = fragments.issues
    opened = open_capture(source) if runs is None else open_runs(source, runs)  # type: ignore[arg-type]
    with opened as (read, fmt, head):
        frames = read_pcap_frames(read, head) if fmt.container == "pcap" else read_pcapng_frames(read, head)
        if runs is not None:
            frames = remap(frames, runs)
        frame = None
        failure_told = False
        for frame in frames:
            if isinstance(frame, tuple):
                segment = decode(*frame)
                if segment is not None:
                    yield segment
                if issues:
                    yield from issues
                    issues.clear()
            else:
                if frame.kind == "truncated_file" and read.failure is not None:
                    # The data ended because reading failed: say why, where the cut shows.
                    kind, detail = read.failure
                    frame = CaptureIssue(frame.packet_index, frame.file_offset, kind, f"{detail} ({frame.detail})")
                    failure_told = True
                yield frame
        fragments.flush()
        yield from issues
        if isinstance(read, RangeRead):
            read.finish()
        if read.failure is not None and not failure_told:
            kind, detail = read.failure
            after = 0 if frame is None else frame[0] + 1 if isinstance(frame, tuple) else frame.packet_index
            if isinstance(read, RangeRead) and read.packets_after is not None:  # the end of the file
                after = max(after, read.packets_after)
            yield CaptureIssue(after, -1, kind, detail)
