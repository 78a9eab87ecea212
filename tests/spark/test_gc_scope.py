"""A read keeps the collector off what was alive before it, and gives everything back when it ends."""

from __future__ import annotations

import gc
import weakref

import pytest

from kafka_protocol_source.spark.gc_scope import long_lived_frozen
from kafka_protocol_source.spark.options import ReadOptions
from kafka_protocol_source.spark.partition_reader import CapturePartition, PartitionReader
from kafka_protocol_source.spark.source import default_schema

from .expected import MOCK_AIOKAFKA


@pytest.fixture(autouse=True)
def _nothing_frozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


class Cycle:
    def __init__(self):
        self.me = self


def test_what_was_alive_is_frozen_inside_and_collectable_again_after():
    before = Cycle()
    alive_before = weakref.ref(before)
    with long_lived_frozen():
        assert gc.get_freeze_count() > 0
        del before
        gc.collect()
        assert alive_before() is not None  # frozen: no collection looks at it
        made = Cycle()
        alive_made = weakref.ref(made)
        del made
        gc.collect()
        assert alive_made() is None  # what the block made is collected as usual
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert alive_before() is None


def test_overlapping_blocks_share_one_freeze_until_the_last_ends():
    # Counted by weak references, not gc.get_freeze_count(): frozen objects other threads free
    # (a Spark session's, in this process) leave that count as they go.
    before = Cycle()
    alive_before = weakref.ref(before)
    outer, inner = long_lived_frozen(), long_lived_frozen()
    outer.__enter__()
    between = Cycle()
    alive_between = weakref.ref(between)
    inner.__enter__()
    del before, between
    gc.collect()
    assert alive_between() is None  # made after the freeze: the inner block froze nothing more
    outer.__exit__(None, None, None)
    gc.collect()
    assert alive_before() is not None  # still frozen: the inner block is under way
    inner.__exit__(None, None, None)
    gc.collect()
    assert alive_before() is None


def test_a_freeze_made_by_the_process_itself_is_left_in_place():
    before = Cycle()
    alive_before = weakref.ref(before)
    gc.freeze()
    with long_lived_frozen():
        pass
    del before
    gc.collect()
    assert alive_before() is not None


def test_a_partition_read_freezes_while_it_runs_and_unfreezes_when_done_or_abandoned():
    options = ReadOptions.parse({"path": str(MOCK_AIOKAFKA)})
    reader = PartitionReader(options, default_schema(options))
    batches = reader.read(CapturePartition(str(MOCK_AIOKAFKA)))
    next(batches)
    assert gc.get_freeze_count() > 0
    batches.close()  # a consumer that stops early
    assert gc.get_freeze_count() == 0
    assert sum(b.num_rows for b in reader.read(CapturePartition(str(MOCK_AIOKAFKA)))) > 0
    assert gc.get_freeze_count() == 0
