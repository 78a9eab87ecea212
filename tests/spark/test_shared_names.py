"""A naming read that went to the end of a capture is shared with the machine's other workers,
and with later queries: they take its names instead of reading the capture again."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_protocol_source.pipeline import CaptureOptions
from kafka_protocol_source.spark import naming_pass, shared_names
from kafka_protocol_source.spec.api_keys import METADATA

from .expected import TANSU_CONFLUENT


def _metadata(**names):
    topics = [{"topic_id": topic_id, "name": name} for topic_id, name in names.items()]
    return SimpleNamespace(api_key=METADATA, response={"topics": topics})


@pytest.fixture
def reads(monkeypatch):
    """The naming reads made (their paths), each of a capture naming a and b."""
    made: list = []

    def read_with(paths, options):
        made.append(paths)
        yield _metadata(a="one")
        yield _metadata(b="two")

    monkeypatch.setattr(naming_pass, "read_with", read_with)
    naming_pass.forget()
    yield made
    naming_pass.forget()


def _naming_read(path=TANSU_CONFLUENT):
    return naming_pass.naming_read([str(path)], CaptureOptions(), lambda ex: True, ("records", "PERMISSIVE"))


def test_a_worker_takes_the_names_another_read_to_the_end(reads):
    first = _naming_read()
    assert first.get("c") is None and first.finished and len(reads) == 1  # named nowhere: read to the end
    naming_pass.forget()  # another worker
    other = _naming_read()
    assert other.finished and (other.get("a"), other.get("c")) == ("one", None)
    assert len(reads) == 1 and other.read == 0


def test_a_read_that_stopped_early_is_not_shared(reads):
    first = _naming_read()
    assert first.get("a") == "one" and not first.finished
    naming_pass.forget()
    other = _naming_read()
    assert not other.finished and other.get("b") == "two" and len(reads) == 2


def test_a_changed_capture_is_read_again(reads, tmp_path):
    capture = tmp_path / "c.pcap"
    capture.write_bytes(TANSU_CONFLUENT.read_bytes())
    assert _naming_read(capture).get("c") is None
    naming_pass.forget()
    os.utime(capture, ns=(0, 0))
    assert not _naming_read(capture).finished and len(reads) == 1


def test_a_worker_waits_for_another_reading_the_capture_then_takes_its_names(reads):
    key = naming_pass._key(
        [str(TANSU_CONFLUENT)], naming_pass._naming_options(CaptureOptions()), ("records", "PERMISSIVE")
    )
    reading = threading.Event()

    def other_worker():
        with shared_names.reading(key):
            reading.set()
            time.sleep(0.3)
            shared_names.store(key, {"a": "uno"})

    thread = threading.Thread(target=other_worker)
    thread.start()
    reading.wait()
    assert _naming_read().get("a") == "uno"  # waited for the other's read, did not read itself
    thread.join()
    assert reads == []


def test_a_worker_that_waited_long_enough_reads_alongside_one_that_holds_the_lock(reads, monkeypatch):
    """A worker stopped or hung while it reads for names would hold the lock for ever: the others
    wait ``WAIT_S`` for it, then read for themselves."""
    key = naming_pass._key(
        [str(TANSU_CONFLUENT)], naming_pass._naming_options(CaptureOptions()), ("records", "PERMISSIVE")
    )
    monkeypatch.setattr(shared_names, "WAIT_S", 0.2)
    holding, done, released = threading.Event(), threading.Event(), []

    def hung_worker():
        with shared_names.reading(key):
            holding.set()
            done.wait(30)
            released.append(True)

    thread = threading.Thread(target=hung_worker)
    thread.start()
    holding.wait()
    try:
        assert _naming_read().get("b") == "two" and len(reads) == 1
        assert released == []  # the lock was still held: this worker read without it
    finally:
        done.set()
        thread.join()
    with shared_names.reading(key, wait_s=0):  # released: taken at once
        pass


def test_a_file_that_is_not_names_is_as_if_there_were_none(reads):
    key = ("some", "key")
    shared_names.store(key, {"a": "one"})
    assert shared_names.load(key) == {"a": "one"}
    shared_names._file(key).write_text('["not", "names"]')
    assert shared_names.load(key) is None
    shared_names._file(key).write_text("{trunc")
    assert shared_names.load(key) is None


def test_a_directory_that_cannot_be_written_shares_nothing_and_reads_alone(reads, monkeypatch, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv(shared_names.DIRECTORY_VARIABLE, str(blocked / "names"))
    assert _naming_read().get("c") is None and len(reads) == 1
    naming_pass.forget()
    assert _naming_read().get("b") == "two" and len(reads) == 2


def test_a_stream_worker_takes_an_earlier_file_s_names_another_read(reads):
    """A stream looks back at its session's earlier files for names: each is read once per machine
    (a restarted stream does not read them again)."""
    files = [(str(TANSU_CONFLUENT), 100)]
    assert naming_pass.earlier_names(files, CaptureOptions(), lambda ex: True, "key") == {"a": "one", "b": "two"}
    naming_pass.forget()
    assert naming_pass.earlier_names(files, CaptureOptions(), lambda ex: True, "key") == {"a": "one", "b": "two"}
    assert len(reads) == 1
    naming_pass.forget()
    assert naming_pass.earlier_names([(str(TANSU_CONFLUENT), 50)], CaptureOptions(), lambda ex: True, "key")
    assert len(reads) == 2  # fewer of its packets: another read


def test_a_worker_that_waited_for_a_read_that_stopped_early_takes_the_names_it_found(reads):
    """The first names a read found before it stopped are the capture's first names of those ids:
    a worker that waited for that read does not read the same start of the capture again."""
    first = _naming_read()
    assert first.get("a") == "one" and not first.finished and len(reads) == 1
    naming_pass.forget()  # another worker, asking for the same id
    other = _naming_read()
    assert other.get("a") == "one" and len(reads) == 1 and other.read == 0
    assert other.get("b") == "two" and len(reads) == 2  # an id it did not find: read


def test_names_of_another_read_mode_or_options_are_not_taken(reads):
    first = _naming_read()
    assert first.get("c") is None and first.finished and len(reads) == 1
    naming_pass.forget()
    other_mode = naming_pass.naming_read(
        [str(TANSU_CONFLUENT)], CaptureOptions(), lambda ex: True, ("records", "DROPMALFORMED")
    )
    assert not other_mode.finished and other_mode.get("a") == "one" and len(reads) == 2
    naming_pass.forget()
    other_ports = naming_pass.naming_read(
        [str(TANSU_CONFLUENT)], CaptureOptions(ports=frozenset({19092})), lambda ex: True, ("records", "PERMISSIVE")
    )
    assert not other_ports.finished and other_ports.get("a") == "one" and len(reads) == 3


def test_a_file_of_another_user_is_as_if_there_were_none(reads, monkeypatch):
    """Another user may make the directory first (in /tmp) and leave names in it: they are not taken."""
    key = ("some", "key")
    shared_names.store(key, {"a": "one"})
    assert shared_names.load(key) == {"a": "one"}
    monkeypatch.setattr(shared_names.os, "getuid", lambda: os.stat(shared_names._file(key)).st_uid + 1)
    assert shared_names.load(key) is None


def test_a_directory_of_ones_own_in_the_shared_temporary_directory_is_used(reads, monkeypatch):
    """KAFKA_WIRE_NAMES_DIR=/tmp/something: /tmp is root's, and sticky."""
    shared = Path(tempfile.gettempdir())
    if shared.stat().st_uid != 0 or not shared.stat().st_mode & stat.S_ISVTX:
        pytest.skip(f"{shared} is not root's sticky directory")
    chosen = shared / f"kafka-wire-test-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv(shared_names.DIRECTORY_VARIABLE, str(chosen))
    try:
        shared_names.store(("some", "key"), {"a": "one"})
        assert shared_names.load(("some", "key")) == {"a": "one"}
    finally:
        shutil.rmtree(chosen, ignore_errors=True)


def test_names_not_written_for_a_week_are_removed(reads):
    shared_names.store(("old",), {"a": "one"})
    old = shared_names._file(("old",))
    week_ago = time.time_ns() - shared_names.KEPT_FOR_NS - 10**9
    os.utime(old, ns=(week_ago, week_ago))
    shared_names.store(("new",), {"b": "two"})
    assert not old.exists() and shared_names.load(("new",)) == {"b": "two"}


def test_a_capture_rewritten_in_place_with_its_size_and_times_is_read_again(reads, tmp_path):
    capture = tmp_path / "c.pcap"
    capture.write_bytes(TANSU_CONFLUENT.read_bytes())
    assert _naming_read(capture).get("c") is None and len(reads) == 1
    naming_pass.forget()
    before = capture.stat()
    capture.write_bytes(capture.read_bytes())  # as cp -p does: same size, times set back
    os.utime(capture, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert not _naming_read(capture).finished


def test_the_directory_is_made_for_this_user_alone(reads):
    shared_names.store(("k",), {"a": "one"})
    assert shared_names.directory().stat().st_mode & 0o077 == 0


def test_names_another_version_of_the_package_left_are_not_taken(reads, monkeypatch):
    shared_names.store(("k",), {"a": "one"})
    monkeypatch.setattr(shared_names, "_VERSION", "another")
    assert shared_names.load(("k",)) is None


def test_a_worker_keeps_the_reads_of_four_captures(reads, tmp_path):
    captures = [tmp_path / f"{n}.pcap" for n in range(5)]
    kept = []
    for n, capture in enumerate(captures):
        capture.write_bytes(b"%d" % n)
        kept.append(_naming_read(capture))
    assert naming_pass.kept() == 4
    assert all(_naming_read(captures[n]) is kept[n] for n in (1, 2, 3, 4))
    assert _naming_read(captures[0]) is not kept[0]  # the oldest went
