"""levelfield.ground.eval_cadence: the evaluation points the trainer follows and TRN019 checks."""

from __future__ import annotations

import pytest

from levelfield.ground.eval_cadence import EvalCadence


def cadence(**training) -> EvalCadence:
    steps_per_epoch, batch = training.pop("steps_per_epoch"), training.pop("batch")
    return EvalCadence.from_rules(training, steps_per_epoch, batch)


def test_an_epoch_cadence_names_integer_epochs():
    points = cadence(max_epochs=5, eval_every_epochs=2, steps_per_epoch=10, batch=4).points()
    assert points == [(20, 2), (40, 4), (50, 5)]  # the last epoch always
    assert all(type(num) is int for _, num in points)


def test_a_quarter_epoch_sample_cadence():
    c = cadence(max_epochs=2, eval_every_samples=64, steps_per_epoch=16, batch=16)
    assert [num for _, num in c.points()] == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]
    assert c.breaks(2) == {4: 1.25, 8: 1.5, 12: 1.75, 16: 2.0}


def test_a_sample_cadence_counts_within_each_epoch_so_every_epoch_end_is_evaluated():
    # 234 steps of 256 samples (Fashion-MNIST's 60,000 at batch 256): 15,000 samples is not a step count.
    c = cadence(max_epochs=2, eval_every_samples=15000, steps_per_epoch=234, batch=256)
    steps = [step for step, _ in c.points()]
    assert steps == [59, 118, 176, 234, 293, 352, 410, 468]
    assert c.epoch_num(234) == 1.0 and c.epoch_num(59) == 59 / 234


def test_a_cadence_longer_than_an_epoch_still_evaluates_every_epoch_end():
    c = cadence(max_epochs=3, eval_every_samples=10**9, steps_per_epoch=8, batch=32)
    assert c.points() == [(8, 1.0), (16, 2.0), (24, 3.0)]


def test_breaks_cover_exactly_the_points_of_their_epoch():
    c = cadence(max_epochs=3, eval_every_samples=96, steps_per_epoch=10, batch=32)
    from_breaks = [(e - 1) * 10 + i for e in (1, 2, 3) for i in sorted(c.breaks(e))]
    assert from_breaks == [step for step, _ in c.points()]


@pytest.mark.parametrize(
    "training, problem",
    [
        ({"max_epochs": 2}, "exactly one"),
        ({"max_epochs": 2, "eval_every_epochs": 1, "eval_every_samples": 64}, "exactly one"),
    ],
)
def test_the_rules_must_name_one_cadence(training, problem):
    with pytest.raises(ValueError, match=problem):
        EvalCadence.from_rules(training, 10, 4)
