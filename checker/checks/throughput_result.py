"""Rules 1.2 training-throughput results and step windows (TRN027-TRN031): figures recomputed from the log.

Under rules 1.2 the trainer logs every train_steps call of the timed run as a
step window with its two clock readings (levelfield/ground/step_windows.py),
and computes its samples/s and step time from the timed windows' readings. So
the checker recomputes both from the log and holds the logged figures to the
recomputation (TRN027), the readings to their lines' time_ms and to the run's
bounds (TRN028), both at any run length and from above and below, in every
log that has windows: throughput results and rules 1.2 time-to-train logs
alike. A figure forged together with readings and time_ms forged to match
cannot be told from the log itself; `levelfield reproduce` replays the result
on the same hardware and catches that (docs/audit.md). The other checks hold
a throughput result to its rules: the warm-up and timed steps (TRN029), the
repeats (TRN030) and the batch size (TRN031) for the checked profile; its
recipe and precision are the closed division's, checked by TRN008.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from levelfield.checker.checks.training import training_logs
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, finite_number, plain_int
from levelfield.ground.step_windows import MS_PER_S, recompute, step_windows
from levelfield.ground.training_log import THROUGHPUT_ONLY_REASON

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission, TrainingResult

_PRODUCE = "submit the logs `levelfield train` wrote, unedited"


def _windowed_logs(sub: Submission, ctx: Context) -> Iterator[tuple[TrainingResult, MllogFile]]:
    """Every log the window checks judge: those with step windows, and every log of a throughput result or
    of a task whose rules have throughput results (rules 1.2 logs all have windows)."""
    for training, log in training_logs(sub):
        rules_windows = ctx.suite.task(training.task).throughput is not None
        if training.kind == L.THROUGHPUT or rules_windows or log.first(LK.STEP_WINDOW_START) is not None:
            yield training, log


def _throughput_logs(sub: Submission, ctx: Context) -> Iterator[tuple[TrainingResult, MllogFile, dict]]:
    """(result, log, the rules' throughput settings for the checked profile) of every throughput result's log
    whose rules have throughput results (the others are TRN024's)."""
    for training in sub.throughputs:
        rules = ctx.task(training.task).throughput_settings(ctx.profile)
        if rules is not None:
            for log in training.logs:
                yield training, log, rules


@check("TRN027", "throughput-figure-mismatch", area="training")
def throughput_figure_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a log's levelfield_train_samples_per_s or levelfield_step_time_ms differs, above or below, from
    the figure its own step windows give (rules 1.2: global_batch_size x the timed windows' steps over the
    sum of their clock readings' differences; the median of their seconds per step), by more than the
    rules' checks.throughput_figure_rtol; or a log whose rules have windows logs a figure without any.
    Why: the trainer computes its figures from exactly those readings, so an honest log matches them to
    float rounding at any run length; a figure edited up or down (a tripled samples/s, a halved step time)
    no longer does. Timestamps squeezed together with their readings but not the figure show here too.
    Bad: levelfield_train_samples_per_s 6566 where the windows give 2188.8 (3 x 1024 x 1 step / 0.468 s).
    Fix: submit the logs `levelfield train` wrote, unedited.
    """
    rtol = float(ctx.suite.checks.get("throughput_figure_rtol", 1e-9))
    for _training, log in _windowed_logs(sub, ctx):
        windows, problems = step_windows(log)
        batch = log.value("global_batch_size")
        if problems or not plain_int(batch) or batch < 1:
            continue  # TRN028's, or TRN001 / TRN008's
        figures = recompute(windows, batch)
        for key, recomputed, unit in (
            (LK.TRAIN_SAMPLES_PER_S, figures.train_samples_per_s, "samples/s"),
            (LK.STEP_TIME_MS, figures.step_time_ms, "ms"),
        ):
            line = log.first(key)
            if line is None or not finite_number(line.value):
                continue  # absent: TRN001 (throughput results) or no step timed; not a number: TRN017
            if recomputed is None:
                yield Finding.at(
                    log.path,
                    f"{key} without a timed step window to compute it from",
                    line=line.lineno,
                    found=line.value,
                    expected=f"no {key} (the log's windows time no step)",
                    hint=_PRODUCE,
                )
            elif not math.isclose(line.value, recomputed, rel_tol=rtol, abs_tol=0.0):
                side = "above" if line.value > recomputed else "below"
                yield Finding.at(
                    log.path,
                    f"{key} is {side} what the log's own step windows give ({figures.timed_steps} timed steps in "
                    f"{figures.timed_seconds:.6g} s at global batch {batch})",
                    line=line.lineno,
                    found=line.value,
                    expected=f"{recomputed:.10g} {unit} (relative tolerance {rtol:g})",
                    hint=_PRODUCE,
                )


@check("TRN028", "step-window-mismatch", area="training")
def step_window_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a log's step windows (rules 1.2: levelfield_step_window_start / _stop, one pair per train_steps
    call) do not fit together or with the log's clock: a line's time_ms differs from its clock reading
    (time_s x 1000) by more than the rules' checks.throughput_stamp_tolerance_ms; a start without its stop;
    a reading that runs backwards, a window that starts before the previous one stopped, steps that do not
    follow on, a warm-up window after a timed one, a window outside run_start..run_stop; or a log whose rules
    have windows without any.
    Why: the figures are computed from the readings, and each reading is written twice, precise in the value
    and cut to milliseconds as the line's time_ms: timestamps squeezed (or stretched) in one of them no
    longer agree with the other, whatever the run's length.
    Bad: time_ms 1795901904500 on a window stop whose time_s is 1795901905.2184634 (squeezed by 718 ms).
    Fix: submit the logs `levelfield train` wrote, unedited.
    """
    tolerance_ms = float(ctx.suite.checks.get("throughput_stamp_tolerance_ms", 1.0))
    for _training, log in _windowed_logs(sub, ctx):
        windows, problems = step_windows(log)
        for line, why in problems:
            yield Finding.at(log.path, f"step windows do not fit together: {why}", line=line.lineno, hint=_PRODUCE)
        if not windows and not problems:
            line = log.first(LK.TRAIN_SAMPLES_PER_S) or log.first("run_start")
            yield Finding.at(
                log.path,
                "no step windows: its rules log every timed train_steps call as one",
                line=None if line is None else line.lineno,
                found=f"no {LK.STEP_WINDOW_START} line",
                expected="a start and a stop line per train_steps call",
                hint=_PRODUCE,
            )
        for window in windows:
            for line, reading in ((window.start, window.start_s), (window.stop, window.stop_s)):
                if finite_number(line.time_ms) and abs(line.time_ms - reading * MS_PER_S) > tolerance_ms:
                    yield Finding.at(
                        log.path,
                        f"{line.key}'s time_ms disagrees with its clock reading (time_s {reading!r})",
                        line=line.lineno,
                        found=line.time_ms,
                        expected=f"{math.floor(reading * MS_PER_S)} +- {tolerance_ms:g} ms",
                        hint=_PRODUCE,
                    )
        yield from _outside_run(log, windows, tolerance_ms)


def _outside_run(log: MllogFile, windows: list, tolerance_ms: float) -> Iterator[Finding]:
    start, stop = log.first("run_start"), log.first("run_stop")
    if not windows or start is None or stop is None:
        return  # absent run_start / run_stop: TRN001
    first, last = windows[0], windows[-1]
    bounds = finite_number(start.time_ms) and finite_number(stop.time_ms)
    if first.start.lineno < start.lineno or (bounds and first.start_s * MS_PER_S < start.time_ms - tolerance_ms):
        yield Finding.at(
            log.path,
            "a step window starts before run_start",
            line=first.start.lineno,
            found=f"time_s {first.start_s!r}",
            expected=f"after run_start (line {start.lineno}, time_ms {start.time_ms})",
            hint=_PRODUCE,
        )
    if last.stop.lineno > stop.lineno or (bounds and last.stop_s * MS_PER_S > stop.time_ms + tolerance_ms):
        yield Finding.at(
            log.path,
            "a step window stops after run_stop",
            line=last.stop.lineno,
            found=f"time_s {last.stop_s!r}",
            expected=f"before run_stop (line {stop.lineno}, time_ms {stop.time_ms})",
            hint=_PRODUCE,
        )


@check("TRN029", "throughput-steps-mismatch", area="training")
def throughput_steps_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training-throughput result's log (rules 1.2, throughput/) states or trains other warm-up or
    timed steps than the rules' for the checked profile (the task's `throughput` section, the profile's
    over it): levelfield_warmup_steps, levelfield_throughput_only, levelfield_timed_steps, and the steps its
    warm-up and timed step windows hold; or it did not finish them (run_stop reason other than
    "throughput only": interrupted, error).
    Why: a figure over fewer timed steps, or with the warm-up cut short so that allocation and autotuning
    fall outside the timed steps, or a repeat stopped early, does not measure what its peers do.
    Bad: levelfield_throughput_only 10 where the rules time 50 steps; warm-up windows of 1 step where the
    rules warm up 5.
    Fix: run `levelfield train --throughput-only` without --steps: the rules' counts are the default.
    """
    for _training, log, rules in _throughput_logs(sub, ctx):
        windows, problems = step_windows(log)
        counted = None if problems or not windows else recompute(windows, 1)
        for key, want, what in (
            (LK.WARMUP_STEPS, rules["warmup_steps"], "warm-up steps"),
            (LK.THROUGHPUT_ONLY, rules["timed_steps"], "timed steps"),
            (LK.TIMED_STEPS, rules["timed_steps"], "timed steps the framework ran"),
        ):
            line = log.first(key)
            if line is not None and not (plain_int(line.value) and line.value == want):
                yield Finding.at(
                    log.path, f"{key}: other {what} than the rules'", line=line.lineno, found=line.value, expected=want
                )
        if counted is not None:
            for phase, found, want in (
                ("warm-up", counted.warmup_steps, rules["warmup_steps"]),
                ("timed", counted.timed_steps, rules["timed_steps"]),
            ):
                if found != want:
                    yield Finding.at(
                        log.path,
                        f"the {phase} step windows hold other steps than the rules'",
                        found=found,
                        expected=want,
                        hint="run `levelfield train --throughput-only` without --steps",
                    )
        stop = log.last("run_stop")
        reason = stop.metadata.get("reason") if stop is not None and isinstance(stop.metadata, dict) else None
        if stop is not None and reason != THROUGHPUT_ONLY_REASON:
            yield Finding.at(
                log.path,
                "the repeat did not finish its steps",
                line=stop.lineno,
                found=f"run_stop reason {reason!r}",
                expected=f"reason {THROUGHPUT_ONLY_REASON!r}",
                hint="run the result's repeats again",
            )


@check("TRN030", "throughput-repeat-count", area="training")
def throughput_repeat_count(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training-throughput result (rules 1.2, throughput/) holds another number of logs than the
    rules' repeats for the checked profile (at least 3).
    Why: the leaderboard ranks the mean of the repeats with its 95% CI and Welch marks; fewer repeats give no
    interval, and more would let a submitter keep the fastest ones.
    Bad: throughput/result_0.txt and result_1.txt where the rules ask for 3 repeats.
    Fix: submit every repeat of one `levelfield train --throughput-only` (3 runs by default).
    """
    for training in sub.throughputs:
        rules = ctx.task(training.task).throughput_settings(ctx.profile)
        if rules is not None and len(training.logs) != rules["repeats"]:
            yield Finding.at(
                training.folder,
                "number of repeats differs from the rules",
                found=len(training.logs),
                expected=rules["repeats"],
                hint="submit every repeat of one `levelfield train --throughput-only`",
            )


@check("TRN031", "throughput-batch-size-not-allowed", area="training")
def throughput_batch_size_not_allowed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: closed division: a training-throughput result's global_batch_size is none of the rules' throughput
    batch sizes (the task's `throughput.global_batch_sizes`; under a non-submittable profile also that
    profile's own global batch).
    Why: samples/s depends on the batch size; frameworks rank against each other at the batch sizes the rules
    name, and a result at a size its peers do not run has no peers. (Its recipe and precision are the
    closed division's: TRN008.)
    Bad: global_batch_size 4096 where the rules' throughput batch sizes are 2048 and 16384.
    Fix: `levelfield train --throughput-only --set global_batch_size=B` with one of the rules' sizes.
    """
    if sub.division != "closed":
        return
    for training, log, rules in _throughput_logs(sub, ctx):
        line = log.first("global_batch_size")
        own = ctx.task(training.task).training.get("global_batch_size")
        allowed = [*rules["global_batch_sizes"], *([own] if own is not None else [])]
        if line is not None and not (plain_int(line.value) and line.value in allowed):
            yield Finding.at(
                log.path,
                "global batch size not among the rules' throughput batch sizes",
                line=line.lineno,
                found=line.value,
                expected=sorted(set(allowed)),
                hint="choose one with --set global_batch_size=B",
            )
