"""``new_batch``: every batch key present, the given ones set, each batch its own records list,
and a key that is not a batch key refused."""

from __future__ import annotations

import pytest

from kafka_protocol_source.records.shapes import BATCH_KEYS, new_batch


def test_every_key_with_the_given_ones_set():
    batch = new_batch(base_offset=7, error="cut")
    assert tuple(batch) == BATCH_KEYS
    assert (batch["base_offset"], batch["error"], batch["magic"]) == (7, "cut", -1)


def test_each_batch_has_its_own_records_list():
    a, b = new_batch(), new_batch()
    a["records"].append({})
    assert b["records"] == []


def test_a_key_that_is_no_batch_key_is_refused():
    with pytest.raises(TypeError, match=r"not batch keys: \['offsets'\]"):
        new_batch(base_offset=1, offsets=2)
