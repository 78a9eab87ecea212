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
from .source import Source, open_capture


def read_packets(
    source: Source,
    *,
    fragment_timeout_s: float = 30.0,
    max_open_fragments: int = 1024,
) -> Iterator[TcpSegment | CaptureIssue]:
    """Yield every TCP segment in a pcap/pcapng capture (gzipped or not), in file order.

    Problems are yielded as `CaptureIssue` items where they occur; a file cut mid-record ends
    with a `truncated_file` issue. Raises `CaptureError` only when the input is not a capture.
    The file is read in chunks; memory stays bounded by the chunk size and the open fragments.
    """
    fragments = FragmentReassembler(int(fragment_timeout_s * 1e9), max_open_fragments)
    decode = PacketDecoder(fragments).decode
    issues = fragments.issues
    with open_capture(source) as (read, fmt, head):
        frames = read_pcap_frames(read, head) if fmt.container == "pcap" else read_pcapng_frames(read, head)
        last = None
        for frame in frames:
            if frame.__class__ is tuple:
                last = decode(*frame)
                if last is not None:
                    yield last
                if issues:
                    yield from issues
                    issues.clear()
            else:
                last = frame
                yield frame
        fragments.flush()
        yield from issues
        if read.failure is not None and not (last.__class__ is CaptureIssue and last.kind == "truncated_file"):
            kind, detail = read.failure
            index = last.packet_index + 1 if last is not None else 0
            yield CaptureIssue(index, -1, kind, detail)
