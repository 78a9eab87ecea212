"""What an offset's entry carries from the one before: a file keeps what it was read as
(beside another writer's from some packet, read up to some packet at a flush), renamed too."""

from __future__ import annotations

from kafka_protocol_source.spark.offset_entry import BY_TIME_FROM, FLUSHED, carry, flushed, marks


def test_a_file_read_beside_another_writers_from_the_packets_new_now():
    entry = {"packets": 50}
    carry(entry, {}, read_before=20, beside_others=True)
    assert entry[BY_TIME_FROM] == 20
    alone = {"packets": 50}
    carry(alone, {}, read_before=20, beside_others=False)
    assert BY_TIME_FROM not in alone


def test_what_a_file_was_read_as_stays_with_it_and_never_past_its_packets():
    prior = {"packets": 40, BY_TIME_FROM: 10, FLUSHED: 40}
    grown = {"packets": 60}
    carry(grown, prior, read_before=40, beside_others=True)
    assert (grown[BY_TIME_FROM], grown[FLUSHED]) == (10, 40)  # not moved on to 40 by being beside another now
    shrunk = {"packets": 30}  # cut in place since
    carry(shrunk, prior, read_before=40, beside_others=False)
    assert (shrunk[BY_TIME_FROM], shrunk[FLUSHED]) == (10, 30)


def test_a_flush_marks_every_file_as_read_so_far_and_marks_reads_them_back():
    files = flushed({"a.pcap": {"packets": 7}, "b.pcap": {"packets": 3, BY_TIME_FROM: 1}})
    assert marks(files, ["a.pcap", "b.pcap", "c.pcap"], FLUSHED) == {"a.pcap": 7, "b.pcap": 3}
    assert marks(files, ["a.pcap", "b.pcap"], BY_TIME_FROM) == {"b.pcap": 1}
