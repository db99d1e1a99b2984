"""The trainer's progress chunks: the first is 1/20 of an epoch, later ones about CHUNK_TARGET_S long."""

from __future__ import annotations

import numpy as np

from levelfield.harness import progress
from levelfield.harness.progress import CHUNK_TARGET_S, FIRST_CHUNKS_PER_EPOCH, EpochProgress


class FakeClock:
    """perf_counter for the progress module: advances only when the 'framework' trains steps."""

    def __init__(self):
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def test_chunks_cover_every_step_once_in_order_and_grow_to_the_target_length(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    step_s = 0.004  # 250 steps per second
    steps = 1000
    order = np.arange(steps * 2).reshape(steps, 2)  # [steps, batch]
    lrs = np.linspace(0.1, 0.2, steps)
    bar = EpochProgress("ctr-dlrm", "tensorflow", 0, 2, steps)
    for epoch in (1, 2):
        seen_rows, seen_lrs = [], []
        for rows, rates in bar.steps(epoch, order, lrs):
            clock.now_s += step_s * len(rows)  # what the framework's train_steps takes
            seen_rows.append(rows)
            seen_lrs.append(rates)
        assert np.array_equal(np.concatenate(seen_rows), order) and np.array_equal(np.concatenate(seen_lrs), lrs)
    target = round(CHUNK_TARGET_S / step_s)
    first = steps // FIRST_CHUNKS_PER_EPOCH
    assert bar.chunks[0] == first and bar.chunks[1] == target
    assert bar.chunks[:5] == [first, target, target, target, steps - first - 3 * target]  # the epoch's rest
    assert bar.chunks[5] == target  # epoch 2 starts at the learned length


def test_with_the_real_clock_the_chunks_still_cover_the_epoch_exactly():
    bar = EpochProgress("fmnist-resnet", "jax", 0, 1, 3)
    rows = [r for r, _ in bar.steps(1, np.arange(3 * 4).reshape(3, 4), np.zeros(3))]
    assert bar.chunks[0] == 1 and all(len(r) >= 1 for r in rows)  # 3 // 20 steps rounds up to one
    assert np.array_equal(np.concatenate(rows), np.arange(3 * 4).reshape(3, 4))


def test_segments_of_one_epoch_share_its_bar_and_cover_it_in_order():
    """Evaluations inside an epoch cut it into segments; the bar is the epoch's, not the segment's."""
    order = np.arange(10 * 2).reshape(10, 2)
    with EpochProgress("seq-transformer", "pytorch", 0, 1, 10) as bar:
        first = [r for r, _ in bar.steps(1, order[:4], np.zeros(4))]
        epoch_bar = bar._bar
        rest = [r for r, _ in bar.steps(1, order[4:], np.zeros(6))]
        assert bar._bar is epoch_bar and sum(bar.chunks) == 10
    assert bar._bar is None  # closed on exit
    assert np.array_equal(np.concatenate(first + rest), order)


def test_an_evaluation_line_shows_a_fractional_epoch(capsys):
    bar = EpochProgress("seq-transformer", "jax", 2, 8, 64)
    bar.evaluated(2.25, "exact_match", 0.5, 0.9)
    bar.evaluated(3, "exact_match", 0.95, 0.9)
    assert capsys.readouterr().out.splitlines() == [
        "seq-transformer/jax run 2 epoch 2.25: exact_match 0.5000 (below target 0.9)",
        "seq-transformer/jax run 2 epoch 3: exact_match 0.9500 (reached target 0.9)",
    ]
