"""What a followed folder holds, as listed: captures with packets, within the age limits, a file
that is no capture read once whole when left alone, and when the folder last changed (a file
copied in with an old modification time changes it all the same)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.stream_folder import OTHER, WatchedFolder

SAMPLE = Path(__file__).resolve().parents[2] / "sample_captures" / "mock_aiokafka_all_codecs.pcap"
HOUR_NS = 3600 * 10**9


def folder_of(path: Path, min_age_ns: int = 0, max_age_ns: int = 7 * 24 * HOUR_NS) -> WatchedFolder:
    return WatchedFolder(ReadOptions.parse({"path": str(path)}), min_age_ns, max_age_ns)


def never(written_ns: int, now_ns: int) -> bool:
    return False


def always(written_ns: int, now_ns: int) -> bool:
    return True


def test_captures_with_packets_are_listed_and_empty_files_are_not(tmp_path):
    shutil.copy(SAMPLE, tmp_path / "a.pcap")
    (tmp_path / "b.pcap").write_bytes(b"")  # tcpdump's next file, not written yet
    found = folder_of(tmp_path).captures(never)
    assert list(found) == [str(tmp_path / "a.pcap")]
    assert found[str(tmp_path / "a.pcap")].packets > 0


def test_a_file_that_is_no_capture_waits_until_left_alone_then_is_read_once_whole(tmp_path):
    (tmp_path / "dump.bin").write_bytes(b"\x00\x00\x00\x04abcd")
    folder = folder_of(tmp_path)
    assert folder.captures(never) == {}  # maybe a capture whose header is half written
    found = folder.captures(always)[str(tmp_path / "dump.bin")]
    assert (found.container, found.packets) == (OTHER, 1)


def test_age_limits_leave_out_files_too_young_and_too_old(tmp_path):
    for name in ("old.pcap", "new.pcap"):
        shutil.copy(SAMPLE, tmp_path / name)
    two_days_ago = time.time() - 48 * 3600
    os.utime(tmp_path / "old.pcap", (two_days_ago, two_days_ago))
    assert list(folder_of(tmp_path, max_age_ns=HOUR_NS).captures(never)) == [str(tmp_path / "new.pcap")]
    assert folder_of(tmp_path, min_age_ns=HOUR_NS).captures(never).keys() == {str(tmp_path / "old.pcap")}


def test_a_file_copied_in_with_an_old_modification_time_is_written_now(tmp_path):
    folder = folder_of(tmp_path)
    folder.captures(never)
    before = time.time_ns()
    shutil.copy2(SAMPLE, tmp_path / "a.pcap")  # cp -p: the sample's own modification time
    week_ago = time.time() - 7 * 24 * 3600 + 60
    os.utime(tmp_path / "a.pcap", (week_ago, week_ago))
    folder.captures(never)
    size, modified, written = folder.written[str(tmp_path / "a.pcap")]
    assert size == SAMPLE.stat().st_size
    assert modified < before <= written
    assert folder.changed_ns >= before
    changed = folder.changed_ns
    folder.captures(never)  # listed again, unchanged: neither moves
    assert folder.written[str(tmp_path / "a.pcap")][2] == written
    assert folder.changed_ns == changed
