"""A reader of some connections names topics by id as one read of every connection would have."""

from types import SimpleNamespace

from kafka_protocol_source.spec.api_keys import METADATA
from kafka_protocol_source.views.topic_names import TopicNames, learning_as_read, name_changes

_END = 1 << 62  # where the end of the input completed an exchange


def _metadata(completed_at, **names):
    topics = [{"topic_id": topic_id, "name": name} for topic_id, name in names.items()]
    return SimpleNamespace(api_key=METADATA, response={"topics": topics}, completed_at=completed_at)


def _fetch(completed_at):
    return SimpleNamespace(api_key=1, response={}, completed_at=completed_at)


def test_changes_say_where_each_id_was_first_named_or_renamed():
    read = [_metadata(3, a="one"), _metadata(5, a="one", b="two"), _metadata(9, a="uno"), _metadata(None, c="three")]
    assert name_changes(read) == [(3, "a", "one"), (5, "b", "two"), (9, "a", "uno"), (_END, "c", "three")]


def test_names_from_elsewhere_are_those_learned_before_the_exchange_being_read():
    changes = [(3, "a", "one"), (5, "b", "two"), (9, "c", "three"), (_END, "d", "four")]
    asked = []

    def elsewhere():
        asked.append(True)
        return changes

    names = TopicNames()
    seen = []
    for _ in learning_as_read([_fetch(2), _fetch(5), _fetch(6), _fetch(None)], elsewhere, names):
        seen.append([names.name(i) for i in "abcd"])
    assert seen == [
        [None, None, None, None],
        ["one", None, None, None],  # b was named at packet 5, on this exchange's own connection
        ["one", "two", None, None],
        ["one", "two", "three", None],  # completed by the end of the input, as d was elsewhere
    ]
    assert names.name("d") == "four"  # once every exchange is read
    assert asked == [True]  # fetched once


def test_an_id_its_own_connections_named_needs_nothing_from_elsewhere():
    names = TopicNames()

    def elsewhere():
        raise AssertionError("not asked for")

    for ex in learning_as_read([_metadata(4, a="one"), _fetch(7)], elsewhere, names):
        names.learn(ex)
        assert names.name("a") == "one"
    assert names.name(None) is None
