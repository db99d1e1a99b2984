"""Throughput-only runs (`levelfield train --throughput-only --steps N`): which steps, their limit, their figures.

    check_steps(10, steps_per_epoch=4, max_epochs=3, where="ctr-dlrm (profile smoke)")  # UserError past 12
    step_spans(steps_per_epoch=4, steps=10)       # [(1, 4), (2, 4), (3, 2)]: (epoch, its first k steps)
    median_and_range([1200.0, 1150.0, 1310.0])    # {"n": 3, "median": 1200.0, "min": 1150.0, "max": 1310.0}

A vendor comparing frameworks before a task's target is calibrated needs the
training throughput alone. Such a run is initialised and warmed up as a
time-to-accuracy run (untimed; its warm-up compiles no predict, since it never
evaluates), then trains exactly N optimizer steps: the
first N steps a time-to-accuracy run of the same seed takes, epoch 1's batches,
then epoch 2's, each at the learning rate that run gives it. It never
evaluates and has no target: its log says `levelfield_throughput_only` N and
ends with run_stop aborted, reason "throughput only", so nothing reads it as a
result (`levelfield package` refuses it, the checker reports it as TRN024).

N is at most the steps of a full run (max_epochs x steps per epoch): past
them a time-to-accuracy run has no learning rate to copy. (Not extended: the
standard tasks' smoke runs time 1 of their 4, and a submission-profile run of
ctr-dlrm-standard has 512 steps, seq-transformer-standard's 1,024.)
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError
from levelfield.ground.training_log import THROUGHPUT_ONLY_REASON

if TYPE_CHECKING:
    from levelfield.harness.options import TrainOptions
    from levelfield.harness.run_outcome import RunOutcome
    from levelfield.reference.interface import Recipe
    from levelfield.rules.loader import Task

REASON = THROUGHPUT_ONLY_REASON  # run_stop's reason: never "target reached", and its status is aborted


def check_options(options: TrainOptions, task: Task, recipe: Recipe, max_epochs: int) -> None:
    """UserError for a throughput-only run that cannot be one: it trains the first N steps of a full run
    and keeps nothing a result keeps (weights), nor is it a calibration run."""
    if options.save_weights or not options.stop_at_target or options.calibration_stop is not None:
        raise UserError("a throughput-only run saves no weights and is no calibration run; got both")
    check_steps(
        options.throughput_steps,
        steps_per_epoch=task.train_samples // recipe.global_batch_size,
        max_epochs=max_epochs,
        where=f"{task.id} (profile {options.profile})",
    )


def check_steps(steps: int, *, steps_per_epoch: int, max_epochs: int, where: str) -> None:
    """UserError unless 1 <= steps <= a full run's steps (max_epochs x steps_per_epoch)."""
    most = steps_per_epoch * max_epochs
    if not 1 <= steps <= most:
        raise UserError(
            f"--steps {steps}: expected 1 to {most}, the steps of a full run of {where} "
            f"({max_epochs} epoch(s) x {steps_per_epoch} steps), whose learning rates it copies",
            hint="choose fewer steps, or a profile with longer runs (the submission profile, the default)",
        )


def step_spans(steps_per_epoch: int, steps: int) -> list[tuple[int, int]]:
    """(epoch, how many of its first steps to train) for `steps` steps from epoch 1 on; epochs count from 1."""
    spans, left, epoch = [], steps, 1
    while left > 0:
        take = min(left, steps_per_epoch)
        spans.append((epoch, take))
        left, epoch = left - take, epoch + 1
    return spans


def median_and_range(values: list[float | None]) -> dict:
    """n, median, min and max of the runs' figures that exist (None: a run that timed no step).

    The median and the full range rather than a mean and CI: a handful of runs on a shared machine, where
    one run slowed by other work should move the headline figure as little as possible and show plainly."""
    present = [v for v in values if v is not None]
    if not present:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {"n": len(present), "median": statistics.median(present), "min": min(present), "max": max(present)}


def figures(outcomes: list[RunOutcome]) -> dict:
    """summary.json's `throughput`: the median and range of rank 0's samples/s and step time over the runs."""
    return {
        "train_samples_per_s": median_and_range([o.train_samples_per_s for o in outcomes]),
        "step_time_ms": median_and_range([o.step_time_ms for o in outcomes]),
    }
