"""A training log's throughput against the log's own clock (TRN023), and the trainer's throughput record.

The failing case from above lives with the other plants (tests/throughput_plants.py,
test_checker_fixtures.py); here are its passing twins (an honest rate over a long enough training time,
and a high rate over a time too short to judge from above) and both sides of the bound from below, which
holds at any length.
"""

from __future__ import annotations

import pytest
from test_checker_fixtures import EXAMPLE

from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from levelfield.harness.throughput import Throughput
from tests.node_plants import log_beside_world_size
from tests.submission_edit import copy_tree, reseal
from tests.throughput_plants import MIN_CHECKED_S, log_rate_of, stretch_training


def _tree_with_rate(tmp_path, *, stretch_s: float, times_the_log: float) -> list:
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log = next(tree.rglob("ctr-dlrm/pytorch/training/result_0.txt"))
    stretch_training(log, stretch_s)
    log_beside_world_size(log, LK.TRAIN_SAMPLES_PER_S, times_the_log * log_rate_of(log))
    reseal(tree)
    return check_tree(tree).active


def test_a_rate_the_log_allows_passes(tmp_path):
    assert _tree_with_rate(tmp_path, stretch_s=2 * MIN_CHECKED_S, times_the_log=1.1) == []


def test_a_training_time_too_short_to_judge_is_not_judged(tmp_path):
    assert _tree_with_rate(tmp_path, stretch_s=0, times_the_log=3) == []


@pytest.mark.parametrize("stretch_s", [0, 2 * MIN_CHECKED_S], ids=["short", "long"])
def test_a_rate_below_the_logs_is_trn023_at_any_length(tmp_path, stretch_s):
    # `make fuzz` found 0.5 samples/s passing on the example's one-second runs (2026-11-25).
    findings = _tree_with_rate(tmp_path, stretch_s=stretch_s, times_the_log=0.5)
    assert [(f.code, "is below what the log's own clock allows" in f.message) for f in findings] == [("TRN023", True)]
    assert _tree_with_rate(tmp_path / "honest", stretch_s=stretch_s, times_the_log=1.0) == []


def test_the_rate_is_global_batches_over_the_timed_calls_and_the_step_time_their_median():
    timed = Throughput(global_batch_size=256)
    assert (timed.samples_per_s(), timed.step_time_ms()) == (None, None)
    for steps, seconds in ((10, 1.0), (10, 1.2), (5, 2.5), (0, 0.3)):  # a call slowed 5x; an empty call
        timed.add(steps, seconds)
    assert timed.samples_per_s() == pytest.approx(256 * 25 / 4.7)
    assert timed.step_time_ms() == pytest.approx(120.0)  # the median of 100, 120 and 500 ms
