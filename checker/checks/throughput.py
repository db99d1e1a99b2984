"""A training log's throughput figures against the log's own clock (TRN023); a throughput-only log that is no
result (TRN024). A rules 1.2 training-throughput result's own checks are in throughput_result.py.

The trainer logs the timed steps' samples per second and median step time
(levelfield/harness/throughput.py). Both come from timers inside the training
time the log itself records: run_start to run_stop, less the evaluations
(eval_start to eval_stop). The samples trained over that time give a rate the
logged one must come close to: the timed calls cover all of it but the loop's
own bookkeeping (a progress bar, the data order), so an honest rate is at most
MAX_RATE_OVER_LOG times the log's; a higher one was not measured by this run.
That bookkeeping is a few milliseconds per evaluation, whatever the speed of
the steps, so the log's clock tells only over a long enough training time,
MIN_CHECKED_S. Measured on this 2-core CPU: a demo run of fmnist-resnet in JAX
(161 s of training) logged 1.0003 times its log's rate; smoke runs of
ctr-dlrm (43 ms to 1.3 s of training) 1.01 to 1.54 times, which is why they
are not judged from above. From below every run is: that bookkeeping only
lowers the log's rate, so an honest rate is never far under it
(MIN_RATE_UNDER_LOG).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mlperf_logging.mllog import constants as K

from levelfield.checker.checks.training import training_logs
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, finite_number, plain_int
from levelfield.ground.training_log import throughput_only_mark

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission

MAX_RATE_OVER_LOG = 1.25
MIN_CHECKED_S = 10.0  # shorter training times are left unjudged: the loop's own milliseconds dominate them
# From below, any length is judged: the timed calls lie inside the log's training time and what they leave
# out (bookkeeping, a first call that compiles) trains fewer samples per second, so an honest rate is at
# least the log's (the rounded stamps read as long as they allow). Measured: 1.018-1.037 times it on the
# example's 0.5-1.2 s runs, 1.000-1.001 on the demo's 17-38 s ones; below 0.8 it was not this run's.
MIN_RATE_UNDER_LOG = 0.8
# Each timestamp is whole milliseconds: the training time read from the log may be short by this per interval.
_MS_ROUNDING = 1.0
_ENDED_AT_AN_EVALUATION = ("target reached", "max epochs", "calibration stop")


def log_rate(log: MllogFile) -> tuple[float, float] | None:
    """(samples per second the log's clock allows, the training seconds it is over), or None when the run
    did not end at an evaluation or the log lacks what it needs (other checks report that)."""
    start, stop, samples = log.first(K.RUN_START), log.last(K.RUN_STOP), log.value(K.TRAIN_SAMPLES)
    evals = log.all(K.EVAL_ACCURACY)
    if start is None or stop is None or not evals or not plain_int(samples):
        return None
    if not isinstance(stop.metadata, dict) or stop.metadata.get("reason") not in _ENDED_AT_AN_EVALUATION:
        return None
    epoch_num = evals[-1].metadata.get(K.EPOCH_NUM) if isinstance(evals[-1].metadata, dict) else None
    times = [start.time_ms, stop.time_ms]
    pairs = list(zip(log.all(K.EVAL_START), log.all(K.EVAL_STOP), strict=False))
    times += [t for pair in pairs for t in (pair[0].time_ms, pair[1].time_ms)]
    if not finite_number(epoch_num) or not all(finite_number(t) for t in times):
        return None
    training_ms = stop.time_ms - start.time_ms - sum(b.time_ms - a.time_ms for a, b in pairs)
    training_ms += _MS_ROUNDING * (1 + 2 * len(pairs))  # the longest the rounded stamps allow
    if training_ms <= 0:
        return None
    return samples * epoch_num / (training_ms / 1000), training_ms / 1000


@check("TRN023", "throughput-beyond-the-log", area="training")
def throughput_beyond_the_log(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training log's levelfield_train_samples_per_s is more than 1.25 times the rate its own clock
    allows (the samples trained, train_samples x the last evaluation's epoch_num, over the time from
    run_start to run_stop without the evaluations), where that time is at least 10 s; or, at any length,
    below 0.8 times it.
    Why: the throughput shown beside the time to train must be the run's; the timed steps lie inside that
    time, so a rate far above it was not measured there, and one far below it is not what the steps did.
    Bad: levelfield_train_samples_per_s 9000 where the log trained 240,000 samples in 40 s (6,000/s); 0.5.
    Fix: submit the logs `levelfield train` wrote, unedited.
    """
    for _training, log in training_logs(sub):
        line = log.first(LK.TRAIN_SAMPLES_PER_S)
        allowed = log_rate(log)
        if line is None or allowed is None or not finite_number(line.value):
            continue
        rate, seconds = allowed
        if seconds >= MIN_CHECKED_S and line.value > MAX_RATE_OVER_LOG * rate:
            side, expected = "above", f"at most {MAX_RATE_OVER_LOG:g} x {rate:.0f}"
        elif line.value < MIN_RATE_UNDER_LOG * rate:
            side, expected = "below", f"at least {MIN_RATE_UNDER_LOG:g} x {rate:.0f}"
        else:
            continue
        yield Finding.at(
            log.path,
            f"{LK.TRAIN_SAMPLES_PER_S} is {side} what the log's own clock allows ({rate:.0f} samples/s over "
            f"{seconds:.3f} s of training)",
            line=line.lineno,
            found=line.value,
            expected=expected,
            hint="submit the logs `levelfield train` wrote, unedited",
        )


@check("TRN024", "throughput-only-run", area="training")
def throughput_only_run(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a throughput-only log (it holds levelfield_throughput_only, or a run_stop with reason "throughput
    only": `levelfield train --throughput-only`, which trains a fixed number of steps with no evaluation and
    no target) where it is no result: in training/, whose logs are times to a target; in throughput/ under
    rules without training-throughput results for its task (1.0, 1.1: no `throughput` section); made with a
    profile that is not submittable (smoke, demo) while a submittable one is checked. Also a log in
    throughput/ that is not a throughput-only run's.
    Why: such a run has no time to train, so it must never rank as one; under rules 1.2 it is a result of
    its own kind, in its own folder and table, with rules of its own (TRN027-TRN031); a smoke run's few
    steps are no result (checked as the smoke profile, it is that profile's, as every smoke log).
    Bad: training/result_0.txt with `levelfield_throughput_only` 200 and run_stop aborted, reason
    "throughput only"; throughput/result_0.txt in a rules 1.1 tree; a smoke run's throughput/ log checked
    as a submission.
    Fix: file time-to-accuracy logs in training/ and, under rules 1.2, throughput-only logs in throughput/
    (`levelfield package` does both); train throughput with the submission profile.
    """
    for training, log in training_logs(sub):
        mark = throughput_only_mark(log)
        if training.kind != L.THROUGHPUT:
            if mark is not None:
                line, said = mark
                yield Finding.at(
                    log.path,
                    f"a throughput-only run's log ({said}): no evaluation, no target, never a time-to-accuracy result",
                    line=line.lineno,
                    found=said,
                    expected=f"a time-to-accuracy log, without {LK.THROUGHPUT_ONLY}",
                    hint="submit the logs of `levelfield train` runs made without --throughput-only; under rules "
                    "1.2 a throughput-only log is a result of its own, in throughput/ (`levelfield package`)",
                )
            continue
        yield from _not_a_throughput_result(training, log, mark, ctx)


def _not_a_throughput_result(training, log: MllogFile, mark, ctx: Context) -> Iterator[Finding]:
    """Why a log in throughput/ is no training-throughput result, if it is not one."""
    task = ctx.task(training.task)
    if task.throughput is None:
        yield Finding.at(
            log.path,
            f"rules {ctx.suite.version} have no training-throughput results for {training.task}",
            found=f"{L.THROUGHPUT}/{log.path.rsplit('/', 1)[-1]}",
            expected=f"no {L.THROUGHPUT}/ folder (rules 1.2 and later rank training throughput)",
            hint=f"{task.path.name} has no `throughput` section; train throughput under rules that rank it",
        )
        return
    if mark is None:
        yield Finding.at(
            log.path,
            "a log in throughput/ that is not a throughput-only run's",
            found=f"no {LK.THROUGHPUT_ONLY} line and no run_stop with reason 'throughput only'",
            expected="a log of `levelfield train --throughput-only`",
            hint="file time-to-accuracy logs in training/ (`levelfield package` does)",
        )
        return
    profile = log.first(LK.PROFILE)
    profiles = ctx.suite.profiles
    checked_submittable = profiles[ctx.profile]["submittable"]
    if (
        profile is not None
        and isinstance(profile.value, str)  # an edited value may be anything; TRN010 names it
        and profile.value in profiles
        and not profiles[profile.value]["submittable"]
        and checked_submittable
    ):
        yield Finding.at(
            log.path,
            f"a throughput-only run of the {profile.value} profile, which is not submittable: never a result",
            line=profile.lineno,
            found=profile.value,
            expected=f"the {ctx.profile} profile",
            hint="train throughput with the submission profile (the default)",
        )
