"""Throughput-only runs (`levelfield train --throughput-only [--steps N]`): which steps, their limit, their figures.

    plan(options, task, recipe, max_epochs)      # Plan(warmup_steps=5, timed_steps=50, runs=3, result=True)
    check_steps(10, steps_per_epoch=4, max_epochs=3, where="ctr-dlrm (profile smoke)")  # UserError past 12
    step_spans(steps_per_epoch=4, steps=10)       # [(1, 4), (2, 4), (3, 2)]: (epoch, its first k steps)
    median_and_range([1200.0, 1150.0, 1310.0])    # {"n": 3, "median": 1200.0, "min": 1150.0, "max": 1310.0}

A vendor comparing frameworks needs the training throughput alone. Such a run
is initialised and warmed up as a time-to-accuracy run (untimed; its warm-up
compiles no predict, since it never evaluates), then trains the first steps a
time-to-accuracy run of the same seed takes, epoch 1's batches, then epoch
2's, each at the learning rate that run gives it. It never evaluates and has
no target: its log says `levelfield_throughput_only` N and ends with run_stop
aborted, reason "throughput only", so nothing reads it as a time to train.

Under rules with throughput results (1.2: a task file's `throughput`
section) it is a result of its own: the rules fix, per profile, the warm-up
steps (trained after run_start, logged as `warmup` step windows and excluded
from the figure), the timed steps N and the repeats (the runs), and the log
holds every step window's clock readings, from which the checker recomputes
the figures (levelfield/ground/step_windows.py). `--steps N` may still time
another N; such a run is not the rules' result (TRN029). Under rules without
them (1.0, 1.1) `--steps N` is required, no step is a warm-up one, and the
log is never a result (`levelfield package` refuses it, TRN024).

Warm-up and timed steps together are at most the steps of a full run
(max_epochs x steps per epoch): past them a time-to-accuracy run has no
learning rate to copy.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError
from levelfield.ground.training_log import THROUGHPUT_ONLY_REASON

if TYPE_CHECKING:
    from levelfield.harness.options import TrainOptions
    from levelfield.harness.run_outcome import RunOutcome
    from levelfield.reference.interface import Recipe
    from levelfield.rules.loader import Task

REASON = THROUGHPUT_ONLY_REASON  # run_stop's reason: never "target reached", and its status is aborted


@dataclass(frozen=True)
class Plan:
    """What each run of a throughput-only invocation trains: `warmup_steps` untimed steps, then `timed_steps`
    timed ones; `runs` its repeats unless --runs or the seeds say otherwise (None: the rules' runs); `result`
    whether the rules have throughput results for the task (their warm-up, timed steps and repeats)."""

    warmup_steps: int
    timed_steps: int
    runs: int | None
    result: bool


def plan(options: TrainOptions, task: Task, recipe: Recipe, max_epochs: int) -> Plan | None:
    """The throughput-only plan of a run (None for a time-to-accuracy run); UserError for a throughput-only
    run that cannot be one: it trains the first steps of a full run and keeps nothing a result keeps
    (weights), nor is it a calibration run; without throughput results in the rules it needs --steps N."""
    if not options.throughput_only and options.throughput_steps is None:
        return None
    if options.save_weights or not options.stop_at_target or options.calibration_stop is not None:
        raise UserError("a throughput-only run saves no weights and is no calibration run; got both")
    rules = task.throughput_settings(options.profile)
    if rules is None and options.throughput_steps is None:
        raise UserError(
            f"--throughput-only: needs --steps N under rules without throughput results ({task.path}); "
            "N is the number of timed optimizer steps of each run",
            hint="for example --throughput-only --steps 200, or --rules-version 1.2, whose rules fix N",
        )
    warmup = 0 if rules is None else rules["warmup_steps"]
    timed = options.throughput_steps if options.throughput_steps is not None else rules["timed_steps"]
    steps_per_epoch = task.train_samples // recipe.global_batch_size
    where = f"{task.id} (profile {options.profile})"
    check_steps(timed, steps_per_epoch=steps_per_epoch, max_epochs=max_epochs, where=where, warmup=warmup)
    return Plan(warmup, timed, None if rules is None else rules["repeats"], rules is not None)


def check_steps(steps: int, *, steps_per_epoch: int, max_epochs: int, where: str, warmup: int = 0) -> None:
    """UserError unless 1 <= steps and warmup + steps <= a full run's steps (max_epochs x steps_per_epoch)."""
    most = steps_per_epoch * max_epochs - warmup
    if not 1 <= steps <= most:
        after = f" after the rules' {warmup} warm-up step(s)" if warmup else ""
        raise UserError(
            f"--steps {steps}: expected 1 to {most}{after}, the steps of a full run of {where} "
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
