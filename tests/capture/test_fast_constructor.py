"""``fast_constructor`` builds what the class's own __init__ builds: the same class, equal, frozen,
with the fields' defaults; and a class its twin cannot stand in for still gets a constructor."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass

import pytest

from kafka_protocol_source.capture.model import fast_constructor
from kafka_protocol_source.framing.model import Exchange, Frame, new_exchange, new_frame


def _exchange_args() -> dict:
    return {f.name: f"v{i}" for i, f in enumerate(dataclasses.fields(Exchange)) if f.default is dataclasses.MISSING}


def test_an_exchange_is_the_one_its_init_builds():
    args = _exchange_args()
    fast, slow = new_exchange(**args), Exchange(**args)
    assert type(fast) is Exchange
    assert fast == slow and hash(fast) == hash(slow)
    assert fast.note is None and fast.completed_at is None  # the defaults
    assert dataclasses.asdict(fast) == dataclasses.asdict(slow)
    assert pickle.loads(pickle.dumps(fast)) == slow
    assert copy.copy(fast) == slow
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.status = "x"  # type: ignore[misc]


def test_positional_and_named_arguments():
    assert new_frame(b"ab", 4, 1, 2, 3) == Frame(b"ab", 4, 1, 2, 3) == new_frame(b"ab", 4, 1, 2, first_packet=3)
    with pytest.raises(TypeError):
        new_frame(b"ab", 4)


@dataclass(frozen=True, slots=True)
class _Base:
    a: int


@dataclass(frozen=True, slots=True)
class _Child(_Base):  # its slots are split over two classes: no twin has its layout
    b: str = "b"


def test_a_class_of_another_layout_still_gets_a_constructor():
    make = fast_constructor(_Child)
    assert make(1) == _Child(1) and type(make(1)) is _Child
    assert make(1, b="c") == _Child(1, "c")
