"""Reference convergence points (RCPs): how few epochs to target a training result may plausibly need.

    from levelfield.ground.rcp import reference_points, reference_at, min_acceptable_mean
    points = reference_points(task.reference_convergence, drop=1)  # one ReferencePoint per batch size
    point = reference_at(points, global_batch_size=768)            # exact, interpolated, or None outside
    floor = min_acceptable_mean(point, submission_runs=3, alpha=0.05)
    too_fast = olympic_mean_of_submission < floor

The method is MLPerf's (mlperf_logging's rcp_checker), written afresh:

- per calibrated global batch size, the reference is every calibration run of
  every framework pooled: the reference belongs to the task, not to one
  framework, and a framework that converged a little faster in calibration
  must not make the others look suspicious;
- its mean is the olympic mean (the rules' `olympic_drop` runs dropped from
  each end), the statistic a submission is scored by, so like is compared
  with like; its spread is the population standard deviation of all its runs
  (MLPerf's `np.std`), and its size n is the runs the olympic mean keeps;
- the *minimum acceptable mean* is the lowest submission olympic mean that a
  one-sided, equal-variance two-sample t-test at significance alpha would not
  call faster than the reference (the submission assumed to share the
  reference's spread, since a submission of 5 runs estimates its own spread
  too poorly; its n is the runs its olympic mean keeps). MLPerf binary-searches
  this value; the closed form through Student's t quantile gives it exactly;
- a batch size between two calibrated ones gets the mean and the spread
  interpolated linearly between its neighbours (convergence changes smoothly
  with batch size), and the smaller of their n, since the interpolated point
  is known no better than its less-known neighbour. Outside the calibrated
  range nothing is extrapolated: the caller reports the batch size instead.

Epochs are numbers, not necessarily integers: rules 1.1 evaluate every N
samples, so 2.25 epochs means a quarter into the third epoch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from levelfield.ground.stats import olympic_mean

# The fewest calibration runs per framework at one batch size the rules may hold. With fewer, the
# pooled spread is estimated from so few runs per framework that one framework's lucky seed moves the
# minimum acceptable mean; 5 is the run count of a submitted result, so a reference is never thinner
# than what it judges. A property of the statistics, not a benchmark rule: the same for every task.
MIN_RUNS_PER_FRAMEWORK = 5


@dataclass(frozen=True)
class ReferencePoint:
    """The reference distribution of epochs to target at one global batch size.

    `interpolated_from` holds the two calibrated batch sizes a point was interpolated between (None
    for a calibrated point), so a finding can say where its reference came from."""

    global_batch_size: float
    mean_epochs: float  # olympic mean of the pooled runs
    stdev_epochs: float  # population standard deviation of all pooled runs
    n_runs: int  # runs the olympic mean keeps: the t-test's sample size
    interpolated_from: tuple[float, float] | None = None


def population_stdev(values: Sequence[float]) -> float:
    """Standard deviation with divisor n (numpy's default, MLPerf's RCP spread); 0 for one value."""
    if not values:
        raise ValueError("standard deviation of no values")
    m = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))


def pooled_epochs(epochs_by_framework: Mapping[str, Sequence[float]]) -> list[float]:
    """Every framework's calibration runs at one batch size, as one list (the task's reference)."""
    return [float(e) for runs in epochs_by_framework.values() for e in runs]


def reference_point(global_batch_size: float, epochs: Sequence[float], drop: int) -> ReferencePoint:
    """The reference at one calibrated batch size from its pooled runs' epochs to target."""
    return ReferencePoint(
        global_batch_size=global_batch_size,
        mean_epochs=olympic_mean(epochs, drop),
        stdev_epochs=population_stdev(epochs),
        n_runs=len(epochs) - 2 * drop,
    )


def reference_points(reference_convergence: Mapping, drop: int) -> list[ReferencePoint]:
    """One ReferencePoint per entry of a rules-1.1 `reference_convergence.points`, in batch-size order."""
    points = [
        reference_point(p["global_batch_size"], pooled_epochs(p["epochs_to_target"]), drop)
        for p in reference_convergence["points"]
    ]
    return sorted(points, key=lambda p: p.global_batch_size)


def interpolate(low: ReferencePoint, high: ReferencePoint, global_batch_size: float) -> ReferencePoint:
    """The reference at a batch size between two calibrated ones: mean and spread linear in batch size,
    n the smaller of the two (see the module docstring)."""
    if not low.global_batch_size < global_batch_size < high.global_batch_size:
        raise ValueError(
            f"batch size {global_batch_size} not strictly between {low.global_batch_size} and {high.global_batch_size}"
        )
    w = (global_batch_size - low.global_batch_size) / (high.global_batch_size - low.global_batch_size)
    return ReferencePoint(
        global_batch_size=global_batch_size,
        mean_epochs=low.mean_epochs + w * (high.mean_epochs - low.mean_epochs),
        stdev_epochs=low.stdev_epochs + w * (high.stdev_epochs - low.stdev_epochs),
        n_runs=min(low.n_runs, high.n_runs),
        interpolated_from=(low.global_batch_size, high.global_batch_size),
    )


def reference_at(points: Sequence[ReferencePoint], global_batch_size: float) -> ReferencePoint | None:
    """The calibrated point at `global_batch_size`, else one interpolated between its two neighbours;
    None below the smallest or above the largest calibrated batch size (never extrapolated)."""
    ordered = sorted(points, key=lambda p: p.global_batch_size)
    for point in ordered:
        if point.global_batch_size == global_batch_size:
            return point
    below = [p for p in ordered if p.global_batch_size < global_batch_size]
    above = [p for p in ordered if p.global_batch_size > global_batch_size]
    if not below or not above:
        return None
    return interpolate(below[-1], above[0], global_batch_size)


def min_acceptable_mean(point: ReferencePoint, submission_runs: int, alpha: float) -> float:
    """The lowest submission olympic mean (epochs) that is not significantly faster than `point`.

    One-sided equal-variance t-test of the submission's mean against the reference's, both with the
    reference's spread s: t = (m - mean) / (s * sqrt(1/n_ref + 1/n_sub)) with n_ref + n_sub - 2
    degrees of freedom is "faster" when below Student's t quantile at alpha, so the boundary is
    m = mean + t_alpha * s * sqrt(1/n_ref + 1/n_sub) (t_alpha < 0). `submission_runs` is the number of
    runs the submission's olympic mean keeps. With no spread the reference mean itself (no run may be
    faster than identical runs); never below 0 epochs.
    """
    if point.n_runs < 1 or submission_runs < 1 or point.n_runs + submission_runs < 3:
        raise ValueError(f"t-test needs n_ref + n_sub >= 3 (got {point.n_runs} + {submission_runs})")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if point.stdev_epochs == 0:
        return point.mean_epochs
    from scipy import stats  # scipy comes with mlperf-logging, a core dependency

    t_alpha = float(stats.t.ppf(alpha, df=point.n_runs + submission_runs - 2))
    margin = t_alpha * point.stdev_epochs * math.sqrt(1 / point.n_runs + 1 / submission_runs)
    return max(0.0, point.mean_epochs + margin)
