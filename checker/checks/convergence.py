"""Convergence checks: a training result's epochs to target against the rules' reference convergence.

The suite's `checks.convergence_test` picks the method (rules.loader.convergence_test):
- `welch` (rules 1.0, which predates the key): a one-sided Welch t-test against the calibration
  runs of the one reference batch size; results at another batch size are not judged;
- `rcp` (rules 1.1): MLPerf's reference convergence points, one per calibrated batch size,
  interpolated between them (levelfield/ground/rcp.py); a batch size outside the calibrated range
  is TRN021, never skipped.
Both judge the submission profile only: reference points hold for the full recipe.
"""

from __future__ import annotations

from collections.abc import Iterator

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground import rcp
from levelfield.ground.parse import finite_number
from levelfield.ground.stats import olympic_score
from levelfield.ground.submission.records import Submission, TrainingResult
from levelfield.ground.training_log import epochs_to_target, run_status


def _judged(ctx: Context, task_id: str, method: str) -> dict | None:
    """The task's reference_convergence when `method` is the suite's and the checked profile is
    submittable; None for an uncalibrated task, another method, or a demo/smoke check."""
    reference = ctx.task(task_id).reference_convergence
    if not reference or ctx.suite.convergence_test != method or not ctx.suite.profiles[ctx.profile]["submittable"]:
        return None
    return reference


def batch_size(training: TrainingResult) -> float | None:
    """The global_batch_size every run of the result logged; None when absent, not a positive number,
    or not one value for all runs (TRN001, TRN008 and TRN016 report those)."""
    values = [log.value("global_batch_size") for log in training.logs]  # a list: values may be unhashable
    if not values or not all(finite_number(v) and v > 0 for v in values) or any(v != values[0] for v in values):
        return None
    return values[0]


def run_epochs(training: TrainingResult) -> list[float | None]:
    """Each run's epochs to target in run order, None for a run that did not succeed (the olympic mean
    ranks it slowest, as time to train does); a successful run whose epochs cannot be read is left out
    (TRN014 and TRN019 report its epoch numbers)."""
    out: list[float | None] = []
    for log in training.logs:
        if run_status(log) != "success":
            out.append(None)
        elif (epochs := epochs_to_target(log)) is not None and finite_number(epochs):
            out.append(float(epochs))
    return out


@check("TRN009", "implausibly-fast-convergence", area="training")
def implausibly_fast_convergence(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the result reached the target in significantly fewer epochs than the rules' reference
    convergence allows at its global batch size. Rules 1.1 (`checks.convergence_test: rcp`): the olympic
    mean of the runs' epochs to target is below the reference's minimum acceptable mean, the lowest
    mean a one-sided t-test at `checks.convergence_alpha` would not call faster than the reference
    points (every framework's calibration runs pooled; a batch size between two calibrated ones
    interpolated), as mlperf_logging's RCP checker does. Rules 1.0: a one-sided Welch t-test against
    the calibration runs at the one reference batch size.
    Why: converging faster than the reference recipe allows points to a changed recipe, evaluation on
    training data, or a lucky selection of runs.
    Bad: every run at 1 epoch where the reference runs needed 3 to 4.
    Fix: use the reference recipe and submit consecutive runs; if the speed-up is genuine, submit it
    to the open division with an explanation.
    """
    alpha = float(ctx.suite.checks["convergence_alpha"])
    if ctx.suite.convergence_test == "rcp":
        yield from _rcp_findings(sub, ctx, alpha)
    else:
        yield from _welch_findings(sub, ctx, alpha)


def _rcp_findings(sub: Submission, ctx: Context, alpha: float) -> Iterator[Finding]:
    for training in sub.trainings:
        reference = _judged(ctx, training.task, "rcp")
        batch = batch_size(training)
        if reference is None or batch is None:
            continue
        settings = ctx.task(training.task).training
        drop = settings["olympic_drop"]
        point = rcp.reference_at(rcp.reference_points(reference, drop), batch)
        score = olympic_score(run_epochs(training), drop)
        if point is None or score is None:
            continue  # outside the calibrated range: TRN021; too few runs or a failed one kept: TRN007, TRN004
        floor = rcp.min_acceptable_mean(point, settings["runs"] - 2 * drop, alpha)
        if score < floor:
            where = (
                f"calibrated at {point.global_batch_size}"
                if point.interpolated_from is None
                else f"interpolated between {point.interpolated_from[0]} and {point.interpolated_from[1]}"
            )
            yield Finding.at(
                training.folder,
                "converged faster than the reference convergence points allow: olympic mean of epochs to target "
                f"below the reference's minimum acceptable mean (one-sided t-test, alpha {alpha})",
                found=f"olympic mean {score:.3f} epochs at global_batch_size {batch}",
                expected=(
                    f">= {floor:.3f} epochs (reference {where}: mean {point.mean_epochs:.3f}, "
                    f"stdev {point.stdev_epochs:.3f}, {point.n_runs} runs)"
                ),
            )


@check("TRN021", "batch-size-not-calibrated", area="training")
def batch_size_not_calibrated(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: rules with `checks.convergence_test: rcp`: the result's global_batch_size lies below the
    smallest or above the largest batch size of the task's reference convergence points.
    Why: the convergence test (TRN009) interpolates between calibrated batch sizes but never
    extrapolates: how many epochs a recipe needs changes with batch size, so outside the calibrated
    range there is no reference to judge the result by, and an unjudged result must not pass silently.
    Bad: global_batch_size 4096 where the points are calibrated at 256, 512 and 1024.
    Fix: train with a batch size inside the calibrated range (`levelfield rules show --task T` lists
    the points), or ask for the batch size to be calibrated and added to the rules.
    """
    for training in sub.trainings:
        reference = _judged(ctx, training.task, "rcp")
        batch = batch_size(training)
        if reference is None or batch is None:
            continue
        sizes = [point["global_batch_size"] for point in reference["points"]]
        low, high = min(sizes), max(sizes)
        if not low <= batch <= high:
            yield Finding.at(
                training.folder,
                "global_batch_size outside the batch sizes the reference convergence points calibrate",
                found=batch,
                expected=f"within [{low}, {high}] (calibrated: {', '.join(str(s) for s in sorted(sizes))})",
                hint="train with a calibrated batch size, or one between two of them",
            )


def _welch_findings(sub: Submission, ctx: Context, alpha: float) -> Iterator[Finding]:
    """Rules 1.0's test, unchanged: results at another batch size than the reference's are not judged."""
    from levelfield.ground.stats import mean as stats_mean
    from levelfield.ground.stats import welch_test

    for training in sub.trainings:
        rcp_1_0 = _judged(ctx, training.task, "welch")
        if not rcp_1_0:
            continue  # uncalibrated task, or a demo/smoke check: reference points hold for the full recipe only
        epochs = [e for log in training.logs if run_status(log) == "success" and (e := epochs_to_target(log))]
        batches = [log.value("global_batch_size") for log in training.logs]  # a list: values may be unhashable
        if len(epochs) < 2 or any(b != rcp_1_0["global_batch_size"] for b in batches):
            continue  # reference points exist for one batch size only
        reference = [e for values in rcp_1_0["epochs_to_target"].values() for e in values]
        mean, ref_mean = stats_mean(epochs), stats_mean(reference)
        test = welch_test(epochs, reference, alpha, alternative="less")
        if test["p_value"] is None:  # no spread on either side: the t-test is undefined
            p, faster = (0.0, True) if mean < ref_mean else (1.0, False)
        else:
            p, faster = test["p_value"], not test["within_noise"]
        if faster:
            yield Finding.at(
                training.folder,
                f"converged faster than the reference runs (one-sided Welch t-test p = {p:.3g} < {alpha})",
                found=f"mean {mean:.2f} epochs over {len(epochs)} runs",
                expected=f"mean near {ref_mean:.2f} epochs (reference: {reference})",
            )
