"""The report's queries run side by side and come back in their order; a failure stops the rest."""

from __future__ import annotations

import threading
import time

import pytest

from kafka_protocol_source.report.compute import side_by_side


def test_results_come_in_the_items_order_while_several_run_at_once():
    running, most = set(), []
    lock = threading.Lock()

    def run(item):
        with lock:
            running.add(item)
            most.append(len(running))
        time.sleep(0.05 * (5 - item))  # the first items take longest
        with lock:
            running.discard(item)
        return item * 10

    assert list(side_by_side(run, range(5), threads=3)) == [0, 10, 20, 30, 40]
    assert max(most) == 3


def test_a_failure_is_raised_at_its_item_and_what_had_not_begun_is_not_run():
    began = []
    release = threading.Event()

    def run(item):
        began.append(item)
        if item == 0:
            raise ValueError("no such column")
        release.wait(5)
        return item

    results = side_by_side(run, range(6), threads=2)
    with pytest.raises(ValueError, match="no such column"):
        next(results)
    release.set()
    time.sleep(0.2)
    assert len(began) <= 3  # the failing one, and at most the two the threads had taken
