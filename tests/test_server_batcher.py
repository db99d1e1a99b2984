"""Server's batcher (levelfield/harness/sut.py): batches taken oldest first from what has arrived, cut to a
full padded size where the measured costs say that answers more samples per second.

The queue logic runs without LoadGen: samples are queued as LoadGen's issue thread would queue them
(`_answer`) and `_next_batch` is called as `serve()` calls it.
"""

from __future__ import annotations

import numpy as np
import pytest

from levelfield.harness.sut import BatchPlanner, SampleLibrary, ServerSUT, padded_size

# A compiled predict's cost per padded size on this CPU's scale (fmnist-resnet, ms): a batch of 65-128
# rows costs what 128 do, about 1.8x a full batch of 64.
COSTS_MS = {1: 1.2, 2: 1.6, 4: 3.0, 8: 4.6, 16: 7.1, 32: 13.2, 64: 23.6, 128: 41.0}


def test_padded_size_is_the_next_power_of_two():
    assert [padded_size(n) for n in (1, 2, 3, 64, 65, 128)] == [1, 2, 4, 64, 128, 128]


@pytest.mark.parametrize(
    ("waiting", "expected"),
    [
        (1, 1),
        (64, 64),
        (3, 2),  # 3 rows cost as 4 (3.0 ms): 2 in 1.6 ms answer more per ms
        (70, 64),  # 70 rows cost as 128: 64 now answer 2.7 rows/ms, 70 only 1.7
        (120, 120),  # 120 / 41 ms beats 64 / 23.6 ms
        (500, 128),  # never above the cap
        (33, 32),
    ],
)
def test_the_planner_takes_the_faster_of_all_or_a_full_bucket(waiting, expected):
    assert BatchPlanner(128, COSTS_MS).size(waiting) == expected


def test_without_costs_the_planner_takes_everything_up_to_the_cap():
    planner = BatchPlanner(100)
    assert [planner.size(n) for n in (1, 70, 100, 300)] == [1, 70, 100, 100]


def test_the_planner_learns_costs_from_served_batches():
    planner = BatchPlanner(128)
    assert planner.size(70) == 70  # nothing known yet: greedy
    planner.served(64, 23.6)
    planner.served(100, 41.0)  # a batch of 100 ran padded to 128
    assert planner.costs_ms == {64: 23.6, 128: 41.0}
    assert planner.size(70) == 64
    for _ in range(100):  # under load, 128 turns out cheap: the planner follows
        planner.served(128, 30.0)
    assert planner.costs_ms[128] == pytest.approx(30.0, abs=0.01)
    assert planner.size(70) == 64 and planner.size(100) == 100


def _sut(costs_ms=None, cap=128) -> ServerSUT:
    qsl = SampleLibrary({"x": np.zeros((512, 1), np.float32)}, performance_count=512)
    return ServerSUT(lambda rows: None, qsl, max_batch_size=cap, batch_timeout_us=0, costs_ms=costs_ms)


def _queue(sut: ServerSUT, first_id: int, count: int) -> None:
    sut._answer(list(range(first_id, first_id + count)), np.arange(count) % 512)


def test_batches_are_taken_oldest_first_and_the_rest_waits_for_the_next():
    sut = _sut(COSTS_MS)
    _queue(sut, 0, 70)
    first = sut._next_batch()
    assert [sample_id for sample_id, _ in first] == list(range(64))
    _queue(sut, 70, 10)  # arrived while the first batch ran
    second = sut._next_batch()
    assert [sample_id for sample_id, _ in second] == list(range(64, 80))  # 6 left over, then 10 new: 16


def test_close_answers_every_waiting_sample_then_stops():
    sut = _sut(COSTS_MS, cap=32)
    _queue(sut, 0, 40)
    sut.close()
    answered = []
    while (batch := sut._next_batch()) is not None:
        answered += [sample_id for sample_id, _ in batch]
    assert answered == list(range(40))
