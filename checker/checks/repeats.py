"""Inference checks of a result as a whole: result.json against its logs (INF006), and the repeat count (INF008).

A performance result is N timed LoadGen runs in run_1/ .. run_N/; its
result.json lists each run's metric and validity and summarises them (mean,
n, stdev, 95% CI through levelfield.ground.stats.spread). The checker recomputes
every one of those numbers from the repeats' mlperf_log_detail.txt with the
same helpers (levelfield/ground/metrics.py, levelfield/ground/stats.py), so result.json is a
claim to verify, never a source.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground.metrics import repeat_metrics
from levelfield.ground.stats import spread
from levelfield.ground.submission.records import Submission

# Relative tolerance between result.json's numbers and the checker's: the runner computes them from the
# same doubles LoadGen logged with the same code, so they agree to the last bits.
METRIC_RTOL = 1e-9
STATISTICS_KEYS = ("n", "mean", "stdev", "ci95_low", "ci95_high")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def same_number(reported: Any, expected: float | None) -> bool:
    """`reported` (untrusted JSON) equals `expected` within METRIC_RTOL; None expects None."""
    if expected is None:
        return reported is None
    return _number(reported) and math.isclose(reported, expected, rel_tol=METRIC_RTOL)


def _is_valid(repeat) -> bool:
    return repeat.detail.values().get("result_validity") == "VALID"


@check("INF006", "result-json-mismatch", area="inference")
def result_json_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: result.json disagrees with its folder (task, framework, scenario, mode), records an aborted
    run, or, for a performance run, disagrees with its repeats' LoadGen logs: the metric name is not the
    scenario's, a `runs` entry's metric or validity differs from its run_<i>/mlperf_log_detail.txt, or
    the mean, `statistics` (n, mean, stdev, 95% CI; levelfield.ground.stats.spread) or `valid` (every repeat
    VALID) differ from what the checker recomputes from those logs.
    Why: tables are built from the detail logs through the checker; a result.json that says otherwise
    was edited or belongs to another run, and a narrowed CI or a dropped slow repeat would mislead.
    Bad: result.json "samples_per_s": 9000 next to three detail logs whose mean is 4500, or a ci95_low
    raised by hand.
    Fix: never edit result.json; package the run folder as `levelfield infer` wrote it.
    """
    for run in sub.inferences:
        data = run.result.data if run.result is not None else None
        if not isinstance(data, dict):
            continue  # STR001 / STR003
        for key, want in (
            ("task", run.task),
            ("framework", run.framework),
            ("scenario", run.scenario),
            ("mode", run.mode),
        ):
            if data.get(key) != want:
                yield Finding.at(run.result.path, f"{key} differs from the folder", found=data.get(key), expected=want)
        if data.get("status") != "completed":
            yield Finding.at(
                run.result.path, "the run did not complete", found=data.get("status"), expected="completed"
            )
        if run.mode == L.PERFORMANCE:
            yield from _performance_mismatches(run, data, ctx)


def _performance_mismatches(run, data: dict, ctx):
    path = run.result.path
    rules = ctx.task(run.task).loadgen_settings(ctx.profile, run.scenario)
    name, values = repeat_metrics(run.repeats, run.scenario, rules.get("latency_percentile"))
    if data.get("metric") != name:
        yield Finding.at(path, "metric is not the scenario's", found=data.get("metric"), expected=name)
    entries = data.get("runs") if isinstance(data.get("runs"), list) else []  # not a list: INF008
    for repeat, value in zip(run.repeats, values, strict=True):
        if repeat.detail is None or repeat.index > len(entries):
            continue  # STR001 (no log) / INF008 (fewer entries than folders)
        entry, where = entries[repeat.index - 1], f"runs[{repeat.index - 1}]"
        log = f"{L.repeat_folder(repeat.index)}/{L.DETAIL_LOG}"
        if not isinstance(entry, dict):
            yield Finding.at(path, f"{where} is not an object", found=type(entry).__name__, expected="object")
            continue
        if entry.get("run") != repeat.index or entry.get("folder") != L.repeat_folder(repeat.index):
            yield Finding.at(
                path,
                f"{where} names another repeat",
                found=[entry.get("run"), entry.get("folder")],
                expected=[repeat.index, L.repeat_folder(repeat.index)],
            )
        if value is None:
            yield Finding.at(
                path,
                f"{where}.{name} cannot be verified: {log} holds no {name}",
                found=entry.get(name),
                expected="a detail log holding the scenario's metric",
            )
        elif not same_number(entry.get(name), value):
            yield Finding.at(path, f"{where}.{name} differs from {log}", found=entry.get(name), expected=value)
        if entry.get("valid") != _is_valid(repeat):
            yield Finding.at(
                path,
                f"{where}.valid differs from LoadGen's result_validity in {log}",
                found=entry.get("valid"),
                expected=_is_valid(repeat),
            )
    # The summary is recomputed only over a complete set: repeats 1..N, one entry each, every log
    # holding its metric; anything less is reported above, by STR001 or by INF008.
    indices = [r.index for r in run.repeats]
    complete = (
        indices == list(range(1, len(entries) + 1))
        and all(_number(v) for v in values)
        and all(r.detail is not None for r in run.repeats)
    )
    if not entries or not complete:
        return
    logs = f"the {len(values)} repeats' {L.DETAIL_LOG}"
    try:
        expected = spread(values)
    except (OverflowError, ValueError):  # finite doubles whose sum or squares leave the double range
        yield Finding.at(
            path,
            f"statistics cannot be recomputed: {logs} hold values beyond a double's range",
            found=values,
            expected="metrics a LoadGen run can measure",
        )
        return
    if not same_number(data.get(name), expected["mean"]):
        yield Finding.at(
            path, f"{name} (the mean) differs from the mean of {logs}", found=data.get(name), expected=expected["mean"]
        )
    statistics = data.get("statistics") if isinstance(data.get("statistics"), dict) else {}
    for key in STATISTICS_KEYS:
        if not same_number(statistics.get(key), expected[key]):
            yield Finding.at(
                path,
                f"statistics.{key} differs from levelfield.ground.stats.spread over {logs}",
                found=statistics.get(key),
                expected=expected[key],
            )
    valid = all(_is_valid(r) for r in run.repeats)
    if data.get("valid") != valid:
        yield Finding.at(
            path, "valid differs from 'every repeat VALID' in LoadGen's logs", found=data.get("valid"), expected=valid
        )


@check("INF008", "repeat-count-mismatch", area="inference")
def repeat_count_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a performance run does not hold the rules' number of repeats: its run_<i>/ folders are not
    numbered 1..N without gaps, or N differs from the judged profile's inference_repeats (rules
    suite.yaml; `levelfield check --profile`), or from result.json's `repeats` or the length of its `runs`.
    Why: one LoadGen run cannot rank two frameworks (identical Offline runs vary by 5-11% in samples/s
    on a 2-core machine), and a mean over 2 runs is not comparable with one over 3; a missing repeat
    may be the slow or INVALID one, left out to improve the mean.
    Bad: performance/run_1/ and run_3/ (run_2/ deleted), or 2 repeats where the submission profile asks 3.
    Fix: run `levelfield infer --mode performance` with the profile's repeats (no --repeats) and package
    its folder whole.
    """
    want = int(ctx.suite.profiles[ctx.profile]["inference_repeats"])
    for run in sub.inferences:
        if run.mode != L.PERFORMANCE or not run.repeats:
            continue  # no repeat at all: STR001
        indices = [r.index for r in run.repeats]
        count = len(indices)
        folders = [L.repeat_folder(i) for i in indices]
        if indices != list(range(1, count + 1)):
            yield Finding.at(
                run.folder,
                "run_<i> folders are not numbered 1..N without gaps",
                found=folders,
                expected=[L.repeat_folder(i) for i in range(1, count + 1)],
                hint="package the run folder `levelfield infer` wrote, with every run_<i>/",
            )
        if count != want:
            yield Finding.at(
                run.folder,
                f"{count} repeats where the rules' {ctx.profile} profile asks {want}",
                found=count,
                expected=want,
                hint=f"run `levelfield infer --mode performance --profile {ctx.profile}` without "
                f"--repeats: it runs the profile's {want}",
            )
        data = run.result.data if run.result is not None else None
        if not isinstance(data, dict):
            continue  # STR001 / STR003
        repeats, entries = data.get("repeats"), data.get("runs")
        if not (isinstance(repeats, int) and not isinstance(repeats, bool)) or repeats != count:
            yield Finding.at(
                run.result.path, "repeats differs from the run_<i>/ folders", found=repeats, expected=count
            )
        if not isinstance(entries, list):
            yield Finding.at(
                run.result.path,
                "runs is not a list of the repeats",
                found=type(entries).__name__,
                expected=f"a list of {count}",
            )
        elif len(entries) != count:
            yield Finding.at(
                run.result.path,
                "runs lists another number of repeats than the run_<i>/ folders",
                found=len(entries),
                expected=count,
            )
