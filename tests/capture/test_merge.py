"""Several capture files read as one capture (``capture.merge``), and which files are one (``sessions``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_protocol_source.capture import CaptureIssue, TcpSegment
from kafka_protocol_source.capture.merge import in_time_order
from kafka_protocol_source.capture.summary import CaptureSummary, sessions

S = 10**9


def _segment(file: int, index: int, ns: int) -> TcpSegment:
    return TcpSegment(ns, "10.0.0.1", 40000, "10.0.0.2", 9092, 0, 0, 0x18, b"", 0, (file << 40) | index, 0)


def _file(number: int, times: list[int]) -> list:
    """A file's items: a segment per time (0: a packet without one), an issue for a negative time."""
    return [
        CaptureIssue((number << 40) | i, 0, "snaplen_cut", "") if ns < 0 else _segment(number, i, ns)
        for i, ns in enumerate(times)
    ]


def _starts(*files) -> list:
    """(first time, opener) of files given as item lists: their first packet's time."""
    return [(next((i.timestamp_ns for i in f if getattr(i, "timestamp_ns", 0)), None), lambda f=f: f) for f in files]


def _ids(items) -> list[tuple[int, int]]:
    return [(item.packet_index >> 40, item.packet_index & 0xFFFF) for item in items]


def test_files_that_overlap_are_interleaved_by_time_and_ties_go_to_the_earlier_file():
    a = _file(0, [10, 20, 30, 40])
    b = _file(1, [15, 20, 35])
    got = _ids(in_time_order(_starts(a, b)))
    assert got == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3)]


def test_an_item_without_a_time_stays_behind_the_one_before_it_in_its_file():
    a = _file(0, [10, 0, -1, 30])  # a packet without a time and an issue, after the packet at 10
    b = _file(1, [-1, 20])  # an issue before any time: it goes when its file opens, at its first packet
    got = _ids(in_time_order(_starts(a, b)))
    assert got == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (0, 3)]


def test_a_files_own_order_is_kept_when_its_times_go_back():
    """Two interfaces' blocks written one after the other: the file's order is the capture's."""
    a = _file(0, [10, 50, 20, 60])
    b = _file(1, [30, 40])
    got = _ids(in_time_order(_starts(a, b)))
    assert [i for f, i in got if f == 0] == [0, 1, 2, 3]
    assert got == [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (0, 3)]


def test_the_pieces_of_a_rotated_capture_are_read_in_turn_with_two_files_open_at_most():
    opened, open_now, most = [], set(), [0]

    def piece(number: int):
        def items():
            opened.append(number)
            open_now.add(number)
            most[0] = max(most[0], len(open_now))
            yield from _file(number, [number * 100 + t for t in (1, 2, 3)])
            open_now.discard(number)

        return items

    files = [(n * 100 + 1, piece(n)) for n in range(6)]
    got = _ids(in_time_order(files))
    assert got == [(n, i) for n in range(6) for i in range(3)]
    assert opened == list(range(6)) and most[0] <= 2


def test_empty_files_are_passed_over():
    got = _ids(in_time_order(_starts([], _file(1, [5, 9]), [], _file(3, [7]))))
    assert got == [(1, 0), (3, 0), (1, 1)]


def test_thousands_of_files_without_a_packet_in_a_row_are_passed_over():
    """A ring buffer's quiet hours (ARP and UDP only): no TCP item in any of them."""
    files = [(n, list) for n in range(5000)] + [(6000, lambda: _file(1, [6000, 6001]))]
    assert _ids(in_time_order(files)) == [(1, 0), (1, 1)]


def test_a_file_is_opened_when_the_merge_reaches_its_first_packet_not_its_first_tcp_segment():
    """Files start with packets that are not TCP (ARP, DNS): the next file must still be read
    from its own first packet's time on, not once the one before it yields its first segment."""
    a = _file(0, [100, 200])  # its first packet (an ARP at 0) is no item
    b = _file(1, [60, 150])
    assert _ids(in_time_order([(0, lambda: a), (50, lambda: b)])) == [(1, 0), (0, 0), (1, 1), (0, 1)]


@given(st.lists(st.lists(st.integers(0, 50), max_size=12), min_size=1, max_size=5))
def test_every_item_comes_once_each_files_order_kept_and_sorted_files_merge_sorted(times):
    files = [_file(n, sorted(t)) for n, t in enumerate(times)]
    got = list(in_time_order(_starts(*files)))
    assert sorted(_ids(got)) == sorted(_ids(item for f in files for item in f))
    for n in range(len(files)):
        assert [i for f, i in _ids(got) if f == n] == list(range(len(files[n])))
    timed = [item.timestamp_ns for item in got if item.timestamp_ns]
    assert timed == sorted(timed)


def _summary(name: str, first_s: int, last_s: int, linktypes=(1,)) -> CaptureSummary:
    return CaptureSummary(name, "pcap", False, frozenset(linktypes), first_s * S, last_s * S, 10, 1000, True)


def _names(groups) -> list[list[str]]:
    return [[s.path for s in group] for group in groups]


def test_files_that_overlap_in_time_are_one_session_whatever_their_link_types():
    """One file per interface (lo as Ethernet, any as Linux cooked), each rotated: one capture."""
    files = [
        _summary("lo-0", 0, 60),
        _summary("any-0", 0, 61, linktypes=(276,)),
        _summary("lo-1", 60, 120),
        _summary("any-1", 61, 121, linktypes=(276,)),
        _summary("other-day", 90_000, 90_060),
    ]
    assert _names(sessions(files, 60 * S)) == [["lo-0", "any-0", "lo-1", "any-1"], ["other-day"]]


def test_a_file_that_follows_one_session_and_overlaps_another_makes_them_one():
    """lo rotated, and any started while lo was between its files: lo-1 follows lo-0 and
    overlaps any, so all three are one capture (read apart, lo-1 and any counted twice)."""
    files = [_summary("lo-0", 0, 60), _summary("any", 61, 200, (276,)), _summary("lo-1", 62, 120)]
    assert _names(sessions(files, 60 * S)) == [["lo-0", "any", "lo-1"]]


def test_without_overlapping_an_overlapping_file_stands_alone_and_link_types_still_split_chains():
    files = [_summary("a", 0, 60), _summary("b", 30, 90), _summary("c", 61, 120), _summary("d", 121, 130, (276,))]
    assert _names(sessions(files, 60 * S, overlapping=False)) == [["a", "c"], ["b"], ["d"]]
    assert _names(sessions(files, 60 * S)) == [["a", "b", "c"], ["d"]]
    assert _names(sessions(files, -1, overlapping=False)) == [["a"], ["b"], ["c"], ["d"]]
