"""Accuracy checks: every accuracy run is re-scored from LoadGen's mlperf_log_accuracy.json.

The checker decodes the log with the runner's own decoder and scores it with
the task's numpy metric (`reference/<task>/common/metric.py`) against labels
it reads itself from the rules' dataset, so the number an auditor gets cannot
differ from the number the vendor's run computed, except by tampering. A task
whose rules define a fidelity gate (rules 1.2's standard tasks) is re-scored
against the reference outputs the rules pin instead, at the precision the
run's result.json records (levelfield/ground/fidelity.py); INF020 holds that
precision to the ones the rules allow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground.submission.records import InferenceRun, Submission


def _accuracy_runs(sub):
    for run in sub.inferences:
        if run.mode == "accuracy" and run.accuracy_log is not None and run.accuracy_log.data is not None:
            yield run


def run_precision(run: InferenceRun) -> str:
    """The precision the run's result.json records (rules 1.2), fp32 where it records none (older trees)."""
    data = run.result.data if run.result is not None else None
    precision = data.get("precision") if isinstance(data, dict) else None
    return precision if isinstance(precision, str) else "fp32"


def rescore(run: InferenceRun, ctx: Context) -> tuple[dict | None, str | None]:
    """(the checker's accuracy dict, None) or (None, why the log cannot be scored); cached per run."""
    cache = ctx.cache.setdefault("rescored", {})
    if run.folder not in cache:
        from levelfield.ground.accuracy import score_entries

        task = ctx.task(run.task)
        try:
            if "fidelity" in task.inference:  # rules 1.2: against the pinned reference outputs, no labels
                labels = None
            else:
                labels = ctx.labels(run.task)[: task.inference_samples]  # a profile's eval rows: the first n
            scored = score_entries(run.accuracy_log.data, task, labels, precision=run_precision(run))
            cache[run.folder] = (scored, None)
        except ValueError as error:
            cache[run.folder] = (None, str(error)[:300])
    return cache[run.folder]


@check("ACC001", "accuracy-log-unusable", area="accuracy")
def accuracy_log_unusable(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: mlperf_log_accuracy.json cannot be scored: not an array of {seq_id, qsl_idx, data} entries,
    a response of the wrong size, a sample answered with two different responses, or samples missing.
    Why: accuracy is computed over the whole eval set; a partial or malformed log proves nothing.
    Bad: a log with 9,000 of 10,000 samples, or "data": "zz".
    Fix: re-run `levelfield infer --mode accuracy`; never edit or truncate the log.
    """
    for run in _accuracy_runs(sub):
        _, problem = rescore(run, ctx)
        if problem:
            yield Finding.at(run.accuracy_log.path, f"cannot be scored: {problem}")


@check("ACC002", "accuracy-below-threshold", area="accuracy")
def accuracy_below_threshold(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the checker's re-score of the accuracy log is below the rules' threshold
    (inference.reference_value x inference.accuracy_ratio; for a task with a fidelity gate, rules 1.2's
    standard tasks, the agreement with the pinned reference outputs below inference.fidelity.threshold
    at the run's precision).
    Why: a fast system that answers wrongly is not a result; MLPerf requires 99% of the reference quality,
    and a standard task's result requires computing what the model description says.
    Bad: top1_accuracy 0.81 where the threshold is 0.891; top1_agreement 0.02 (a skipped block) where the
    fp32 threshold is 0.99.
    Fix: use weights trained to the target (`levelfield train --save-weights`) and an unmodified predict;
    for a fidelity gate, the pinned weights (`levelfield infer` loads them without --weights) and a predict
    that computes the model as the rules describe it.
    """
    for run in _accuracy_runs(sub):
        scored, _ = rescore(run, ctx)
        threshold = None if scored is None else scored["threshold"]
        if scored is not None and not scored["value"] >= threshold:
            yield Finding.at(
                run.accuracy_log.path,
                f"{scored['metric']} below the rules' threshold",
                found=scored["value"],
                expected=f">= {threshold:.6g}",
            )


# accuracy.json fields compared with the re-score by their nature: the value within the rules'
# tolerance, the rules' numbers within float rounding, names, counts and flags exactly.
_FROM_RULES = ("reference_value", "accuracy_ratio", "threshold", "tolerance")


def accuracy_differences(reported: dict, scored: dict, tolerance: float) -> list[tuple[str, object, object]]:
    """(field, reported, re-scored) for every field of the checker's re-score that `reported` states
    otherwise (absent counts as otherwise)."""
    out = []
    for key, want in scored.items():
        found = reported.get(key)
        if key == "value":
            same = _number(found) and abs(found - want) <= tolerance
        elif key in _FROM_RULES:
            same = _number(found) and math.isclose(found, want, rel_tol=1e-9)
        else:  # metric, pass, samples; a fidelity gate's gate, precision, items, reference_sha256
            same = type(found) is type(want) and found == want
        if not same:
            out.append((key, found, want))
    return out


@check("ACC003", "accuracy-rescore-mismatch", area="accuracy")
def accuracy_rescore_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: accuracy.json, or the `accuracy` block of the run's result.json, states another metric, value,
    reference value, accuracy ratio, threshold, pass flag or sample count than the checker's re-score of
    mlperf_log_accuracy.json against the rules (values may differ by the rules'
    checks.accuracy_rescore_tolerance); for a fidelity gate also another precision, tolerance, item count
    or reference digest.
    Why: MLCommons parses accuracy.txt with a regex and trusts it; levelfield recomputes the number
    from the raw responses and the rules, so an edited accuracy.json or result.json is caught.
    Bad: accuracy.json "value": 0.95 while the log re-scores to 0.89; "reference_value": 0.80 where the
    rules say 0.826.
    Fix: never edit accuracy.json or result.json; re-run the accuracy mode.
    """
    tolerance = float(ctx.suite.checks["accuracy_rescore_tolerance"])
    for run in _accuracy_runs(sub):
        scored, _ = rescore(run, ctx)
        if scored is None:
            continue  # ACC001
        stated = []
        if run.accuracy is not None and isinstance(run.accuracy.data, dict):
            stated.append((run.accuracy.path, run.accuracy.data))
        if run.result is not None and isinstance(run.result.data, dict) and "accuracy" in run.result.data:
            block = run.result.data["accuracy"]
            stated.append((run.result.path, block if isinstance(block, dict) else {}))
        for path, reported in stated:
            for key, found, want in accuracy_differences(reported, scored, tolerance):
                yield Finding.at(path, f"{key} differs from the checker's re-score", found=found, expected=want)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
