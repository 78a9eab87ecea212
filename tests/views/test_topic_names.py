"""Topic ids are named by any response of the capture that names them, before or after the row."""

from types import SimpleNamespace

import pytest

from kafka_protocol_source.spec.api_keys import METADATA
from kafka_protocol_source.views.topic_names import AwaitingNames, NamesAhead, TopicNames, first_names


def _metadata(**names):
    topics = [{"topic_id": topic_id, "name": name} for topic_id, name in names.items()]
    return SimpleNamespace(api_key=METADATA, response={"topics": topics})


def _row(topic_id, topic=None):
    return {"topic_id": topic_id, "topic": topic}


def test_an_id_keeps_the_first_name_given_to_it():
    read = [_metadata(a="one"), _metadata(a="one", b="two"), _metadata(a="uno")]
    assert first_names(read) == {"a": "one", "b": "two"}
    names = TopicNames()
    for ex in read:
        names.learn(ex)
    assert (names.name("a"), names.name("b"), names.name("c"), names.name(None)) == ("one", "two", None, None)


def test_rows_wait_until_the_end_of_the_read_for_a_name_given_later():
    names = TopicNames(elsewhere=_never)
    awaiting = AwaitingNames(names)
    assert list(awaiting.hold(_row("a"), 100)) == [] and list(awaiting.hold(_row("c"), 100)) == []
    names.learn(_metadata(a="one"))
    assert list(awaiting.release()) == [_row("a", "one"), _row("c")]  # a complete reader does not look ahead
    assert awaiting.rows == [] and awaiting.size == 0


def test_a_reader_of_some_connections_looks_ahead_for_what_its_own_do_not_name():
    asked = []

    def elsewhere():
        asked.append(True)
        return {"a": "one", "b": "two"}

    names = TopicNames(elsewhere, complete=False)
    awaiting = AwaitingNames(names)
    for topic_id in "abc":
        assert list(awaiting.hold(_row(topic_id), 100)) == []
    assert [r["topic"] for r in awaiting.release()] == ["one", "two", None]
    assert names.looked_ahead and names.name("b") == "two" and asked == [True]
    assert list(awaiting.hold(_row("c"), 100)) == [_row("c")]  # known now to be named nowhere
    assert list(awaiting.hold(_row("a"), 100)) == [_row("a", "one")]  # read before it looked ahead


def test_a_reader_whose_own_connections_name_its_ids_does_not_look_ahead():
    names = TopicNames(_never, complete=False)
    awaiting = AwaitingNames(names)
    list(awaiting.hold(_row("a"), 100))
    names.learn(_metadata(a="one"))
    assert list(awaiting.release()) == [_row("a", "one")] and not names.looked_ahead


def test_past_the_budget_the_names_look_ahead_and_the_rows_held_go_out():
    names = TopicNames(lambda: {"a": "one"})
    awaiting = AwaitingNames(names, budget=250)
    assert list(awaiting.hold(_row("a"), 100)) == [] and list(awaiting.hold(_row("b"), 100)) == []
    assert list(awaiting.hold(_row("a"), 100)) == [_row("a", "one"), _row("b"), _row("a", "one")]
    assert names.name("a") == "one"  # rows read from now on are named as they come


def test_without_a_way_to_look_ahead_the_rows_past_the_budget_go_out_as_named_by_then():
    names = TopicNames()
    awaiting = AwaitingNames(names, budget=150)
    assert list(awaiting.hold(_row("a"), 100)) == []
    names.learn(_metadata(a="one"))
    assert list(awaiting.hold(_row("b"), 100)) == [_row("a", "one"), _row("b")]
    assert not names.looked_ahead


def _never():
    raise AssertionError("not asked for")


def test_names_ahead_reads_only_as_far_as_the_ids_asked_about_need():
    given = []

    def read():
        for ex in [_metadata(a="one"), _metadata(b="two"), _metadata(a="uno", c="three")]:
            given.append(ex)
            yield ex

    ahead = NamesAhead(read())
    assert ahead.get("a") == "one" and len(given) == 1 and not ahead.finished
    assert ahead.get("a") == "one" and len(given) == 1  # known: nothing more is read
    assert ahead.get("b") == "two" and len(given) == 2
    assert ahead.get("d") is None and ahead.finished and len(given) == 3  # named nowhere: read to the end
    assert (ahead.get("c"), ahead.get("a"), ahead.read) == ("three", "one", 3)


def test_names_ahead_says_a_read_that_raised_is_broken():
    def read():
        yield _metadata(a="one")
        raise OSError("rotated away")

    ahead = NamesAhead(read())
    assert ahead.get("a") == "one" and not ahead.broken
    with pytest.raises(OSError):
        ahead.get("b")
    assert ahead.broken and ahead.finished
