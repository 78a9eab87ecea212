import pytest

from kafka_protocol_source.spec.versions import NONE, OPEN_END, VersionRange


@pytest.mark.parametrize("text,low,high", [("3+", 3, OPEN_END), ("0-5", 0, 5), ("7", 7, 7), ("none", 1, 0)])
def test_parse(text, low, high):
    r = VersionRange.parse(text)
    assert (r.low, r.high) == (low, high)
    assert str(r) == text


def test_contains_and_intersect():
    r = VersionRange.parse("3+")
    assert 3 in r and 900 in r and 2 not in r
    assert 0 not in NONE and NONE.empty
    assert r.intersect(VersionRange.parse("0-5")) == VersionRange(3, 5)
    assert r.intersect(VersionRange.parse("0-2")) == NONE
    assert list(VersionRange.parse("2-4").versions()) == [2, 3, 4]
    assert list(r.versions(cap=5)) == [3, 4, 5]


@pytest.mark.parametrize("bad", ["", "x", "3-", "+3", "1-2-3"])
def test_bad_ranges_are_rejected(bad):
    with pytest.raises(ValueError):
        VersionRange.parse(bad)
