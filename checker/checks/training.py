"""Training checks: every MLLOG result file against the rules (keys, target, runs, recipe, convergence).

The order of a log's events is checked in log_order.py (TRN012-TRN015, TRN019),
the identity of a result's runs in run_identity.py (TRN020), convergence against
the reference in convergence.py (TRN009, TRN021).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from pathlib import Path

from mlperf_logging.mllog import constants as K

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, finite_number, same_value
from levelfield.ground.submission.records import Submission, TrainingResult
from levelfield.ground.training_log import (
    first_eval_at_target,
    last_eval_before_stop,
    reaches_target,
    run_status,
)

# Relative tolerance for logged hyperparameters: implementations log what their optimizer holds,
# and float32 storage turns 0.9 into 0.8999999761581421.
HYPERPARAMETER_RTOL = 1e-6


@functools.cache
def required_keys(ruleset_path: str) -> tuple[tuple[str, str], ...]:
    """(key, REQ) pairs of the rules' MLLOG ruleset; its CHECK/POST expressions are data here, never run."""
    from pathlib import Path

    from levelfield.ground.validation import load_yaml

    out = []
    for item in load_yaml(Path(ruleset_path)) or []:
        key = item.get("KEY") if isinstance(item, dict) else None
        if isinstance(key, dict) and key.get("REQ") in ("EXACTLY_ONE", "AT_LEAST_ONE"):
            out.append((key["NAME"], key["REQ"]))
    return tuple(out)


def training_results(sub: Submission) -> tuple[TrainingResult, ...]:
    """Every result `levelfield train` wrote: the time-to-train results (training/), then the rules 1.2
    training-throughput results (throughput/). What holds for every log of a run (header, recipe, seeds,
    order, environment) is checked on both; times to target and convergence on training/ only."""
    return (*sub.trainings, *sub.throughputs)


def training_logs(sub: Submission) -> Iterator[tuple[TrainingResult, MllogFile]]:
    """(result, log) for every log of every training and throughput result; the TRN checks' walk."""
    for training in training_results(sub):
        for log in training.logs:
            yield training, log


def ruleset_path(suite_path: Path, training: TrainingResult) -> str:
    """The MLLOG ruleset a result's logs follow: mllog/training.yaml, or for a throughput result (rules 1.2)
    mllog/throughput.yaml, where the rules have one."""
    throughput = suite_path / "mllog" / "throughput.yaml"
    if training.kind == L.THROUGHPUT and throughput.is_file():
        return str(throughput)
    return str(suite_path / "mllog" / "training.yaml")


def runs_after_first(training: TrainingResult) -> Iterator[tuple[MllogFile, MllogFile]]:
    """(the result's first run, a later run) for every later run: what must agree between runs
    (TRN016, TRN020) is compared with the first."""
    for log in training.logs[1:]:
        yield training.logs[0], log


@check("TRN001", "missing-log-key", area="training")
def missing_log_key(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a key the rules' MLLOG ruleset (rules/<version>/mllog/training.yaml; for a training-throughput
    result mllog/throughput.yaml) requires is absent, or a key required exactly once appears several times.
    Why: time to train, the seed, the recipe and the fingerprints are read from these keys; a missing
    one makes the run unverifiable.
    Bad: a log without `seed`, or with two `run_start` lines.
    Fix: produce logs with `levelfield train`, which writes every required key.
    """
    for training, log in training_logs(sub):
        keys = required_keys(ruleset_path(ctx.suite.path, training))
        counts = {}
        for line in log.lines:
            counts[line.key] = counts.get(line.key, 0) + 1
        for key, requirement in keys:
            n = counts.get(key, 0)
            if n == 0:
                yield Finding.at(log.path, f"required key {key!r} missing", expected=requirement.lower())
            elif requirement == "EXACTLY_ONE" and n > 1:
                yield Finding.at(
                    log.path, f"key {key!r} logged {n} times", line=log.all(key)[1].lineno, expected="exactly one"
                )


@functools.cache
def _system_statuses() -> tuple[str, ...]:
    """The availability statuses a system description may declare (its schema's enum)."""
    from levelfield.ground.validation import load_schema

    return tuple(load_schema("system")["properties"]["status"]["enum"])


@check("TRN003", "log-header-mismatch", area="training")
def log_header_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the log's submission_benchmark, levelfield_framework, submission_org, submission_division,
    levelfield_run_index or submission_platform disagree with where the log is filed (the folders, the
    i of result_<i>.txt; platform: the system id or the description's system_name), or its
    submission_status with the system description's status.
    Why: a log filed under the wrong task, framework, run or system would be scored against the wrong
    rules or the wrong hardware, and a system's availability is what the leaderboard's columns sort by.
    Bad: results/box/ctr-dlrm/jax/training/result_0.txt logging levelfield_framework "pytorch".
    Fix: package the runs again; pass --org, --division and --system to `levelfield train`.
    """
    for training, log in training_logs(sub):
        expected = {
            "submission_benchmark": training.task,
            LK.FRAMEWORK: training.framework,
            "submission_org": sub.org,
            "submission_division": sub.division,
        }
        name = L.TRAINING_LOG.match(log.path.rsplit("/", 1)[-1])
        if name is not None:
            expected[LK.RUN_INDEX] = int(name.group(1))
        system = sub.systems.get(training.system)
        declared = system.data.get("status") if system is not None and isinstance(system.data, dict) else None
        if declared in _system_statuses():  # another value is SYS001's
            expected[K.SUBMISSION_STATUS] = declared
        for key, want in expected.items():
            line = log.first(key)
            if line is not None and not same_value(line.value, want, rel_tol=0.0):  # absent keys are TRN001's
                yield Finding.at(
                    log.path,
                    f"{key} differs from where the log is filed",
                    line=line.lineno,
                    found=line.value,
                    expected=want,
                )
        system = sub.systems.get(training.system)
        line = log.first("submission_platform")
        if system is None or line is None:
            continue  # SYS004 / TRN001
        names = {training.system}
        if isinstance(system.data, dict) and isinstance(system.data.get("system_name"), str):
            names.add(system.data["system_name"])
        if not isinstance(line.value, str) or line.value not in names:  # a list is unhashable
            yield Finding.at(
                log.path,
                "submission_platform names another system",
                line=line.lineno,
                found=line.value,
                expected=" or ".join(sorted(names)),
                hint="pass --system systems/<system>.json to `levelfield train`",
            )


@check("TRN004", "too-many-failed-runs", area="training")
def too_many_failed_runs(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: more runs ended with run_stop status other than `success` than the rules' max_failed_runs.
    Why: MLPerf allows one non-converging run, which the olympic mean drops; more means the recipe does
    not converge reliably.
    Bad: 2 of 5 runs with status "aborted" where max_failed_runs is 1.
    Fix: fix the instability and re-run every run of the result.
    """
    for training in sub.trainings:
        allowed = ctx.task(training.task).training["max_failed_runs"]
        failed = [log for log in training.logs if run_status(log) != "success"]
        if len(failed) > allowed:
            yield Finding.at(
                training.folder,
                "too many runs did not succeed",
                found=len(failed),
                expected=f"<= {allowed}",
                hint="failed: " + ", ".join(f.path.rsplit("/", 1)[1] for f in failed),
            )


@check("TRN005", "target-not-reached", area="training")
def target_not_reached(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run says `success` but its last eval before run_stop is below the rules' quality target,
    or the log states a target other than the rules'.
    Why: the status is the run's claim; the eval value is the evidence.
    Bad: run_stop status "success" after eval_accuracy 0.81 with a 0.82 target.
    Fix: train until the target is reached (`levelfield train` stops only there).
    """
    for training, log in training_logs(sub):
        target = ctx.task(training.task).quality["target"]
        stated = log.first(LK.QUALITY_TARGET)
        if stated is not None and stated.value != target:
            yield Finding.at(
                log.path,
                "stated quality target differs from the rules",
                line=stated.lineno,
                found=stated.value,
                expected=target,
            )
        if run_status(log) != "success":
            continue
        line = last_eval_before_stop(log)
        if line is None or not reaches_target(line.value, target):
            yield Finding.at(
                log.path,
                "run_stop says success but the last eval is below the target",
                line=None if line is None else line.lineno,
                found=None if line is None else line.value,
                expected=f">= {target}",
            )


@check("TRN018", "status-contradicts-evals", area="training")
def status_contradicts_evals(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run's run_stop status is not `success` although an eval_accuracy before run_stop reached
    the rules' quality target (the same comparison as TRN005's).
    Why: `levelfield train` stops a run with `success` at the first eval that reaches the target (only
    calibration, which is never a result, trains on past it). The olympic mean ranks a failed run last,
    and the mean, spread and confidence interval of a result cover its successful runs only:
    relabelling a slow success as aborted drops it from them.
    Bad: eval_accuracy 0.8273 at epoch 2 with a 0.82 target, then run_stop status "aborted".
    Fix: submit the logs `levelfield train` wrote, unedited.
    """
    for training, log in training_logs(sub):
        stop = log.last("run_stop")  # the line run_status reads
        status = run_status(log)
        if stop is None or status == "success":
            continue  # no run_stop: TRN001
        target = ctx.task(training.task).quality["target"]
        line = first_eval_at_target(log, target)
        if line is not None:
            yield Finding.at(
                log.path,
                f"run_stop status is not success although the eval at line {line.lineno} reached the target "
                f"({line.value} >= {target})",
                line=stop.lineno,
                found=status,
                expected="success",
                hint="the trainer stops with success at the first eval that reaches the target; submit unedited logs",
            )


@check("TRN006", "nonunique-seed", area="training")
def nonunique_seed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: two runs of one result logged the same seed, or a seed is not an integer.
    Why: repeated runs measure run-to-run variation only when each starts from its own seed; a
    repeated seed repeats one lucky run.
    Bad: result_0.txt and result_3.txt both with "seed": 1234.
    Fix: give each run its own seed (`levelfield train --seed S` uses S, S+1, ...).
    """
    for training in training_results(sub):
        seen: dict = {}
        for log in training.logs:
            line = log.first("seed")
            if line is None:
                continue
            if not isinstance(line.value, int) or isinstance(line.value, bool):
                yield Finding.at(log.path, "seed is not an integer", line=line.lineno, found=line.value)
            elif line.value in seen:
                yield Finding.at(
                    log.path,
                    "seed already used by another run",
                    line=line.lineno,
                    found=line.value,
                    expected=f"a seed other than those of {seen[line.value]}",
                )
            else:
                seen[line.value] = log.path.rsplit("/", 1)[1]


@check("TRN007", "wrong-run-count", area="training")
def wrong_run_count(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the number of result files differs from the rules' run count for the task.
    Why: the olympic mean and its confidence interval are defined over exactly that many runs; more
    runs would let a submitter keep the best ones.
    Bad: 7 result files where the rules say 5.
    Fix: submit exactly the rules' number of consecutive runs.
    """
    for training in sub.trainings:
        runs = ctx.task(training.task).training["runs"]
        if len(training.logs) != runs:
            yield Finding.at(
                training.folder, "number of runs differs from the rules", found=len(training.logs), expected=runs
            )


@check("TRN008", "hyperparameter-not-allowed", area="training")
def hyperparameter_not_allowed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: closed division: a logged hyperparameter differs from the rules' fixed value, lies outside
    the tunable bounds or choices (a non-submittable profile's own global batch also counts as allowed,
    under that profile), or is not logged at all.
    Why: the closed division compares frameworks on one recipe; a different recipe is a different
    benchmark (the open division allows it).
    Bad: opt_momentum 0.95 where the rules fix momentum at 0.9; levelfield_precision bf16 under rules 1.0
    (fp32 fixed) or fp8 under rules 1.1 (choices fp32, bf16, fp16).
    Fix: use the rules' recipe (`levelfield rules show --task T`), tune only what is tunable.
    """
    if sub.division != "closed":
        return
    keys = ctx.suite.hyperparameter_log_keys
    for training, log in training_logs(sub):
        task = ctx.task(training.task)
        hp = task.hyperparameters
        for name, want in hp["fixed"].items():
            line = log.first(keys[name])
            if line is None:
                yield Finding.at(log.path, f"hyperparameter {name} not logged", expected=f"{keys[name]} = {want}")
            elif not _same(line.value, want):
                yield Finding.at(
                    log.path, f"fixed hyperparameter {name} changed", line=line.lineno, found=line.value, expected=want
                )
        for name, spec in hp["tunable"].items():
            line = log.first(keys[name])
            if line is None:
                yield Finding.at(log.path, f"hyperparameter {name} not logged", expected=keys[name])
            elif not _allowed(line.value, spec) and not _profile_value(line.value, name, task):
                bounds = spec["choices"] if "choices" in spec else f"[{spec.get('min')}, {spec.get('max')}]"
                yield Finding.at(
                    log.path,
                    f"tunable hyperparameter {name} outside the rules",
                    line=line.lineno,
                    found=line.value,
                    expected=bounds,
                )


def _same(found, want) -> bool:
    if isinstance(want, bool) or isinstance(found, bool) or isinstance(want, str):
        return found == want
    return finite_number(found) and math.isclose(found, want, rel_tol=HYPERPARAMETER_RTOL, abs_tol=0.0)


def _profile_value(found, name: str, task) -> bool:
    """The checked profile's own value of a tunable (rules 1.1: a smoke profile's global batch); the loader
    allows one on non-submittable profiles only."""
    return name in task.training and _same(found, task.training[name])


def _allowed(found, spec: dict) -> bool:
    if "choices" in spec:  # numbers (batch sizes) or names (rules 1.1 precision: fp32, bf16, fp16)
        return any(_same(found, choice) for choice in spec["choices"])
    if not finite_number(found):
        return False
    low, high = spec.get("min", -math.inf), spec.get("max", math.inf)
    return low * (1 - HYPERPARAMETER_RTOL) <= found <= high * (1 + HYPERPARAMETER_RTOL)


@check("TRN016", "hyperparameters-differ-between-runs", area="training")
def hyperparameters_differ_between_runs(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run of a training result logs another value of a hyperparameter (any key of the rules'
    hyperparameter_log_keys: batch size, learning rate, warm-up, optimizer settings, loss) than the
    result's first run, or logs it where the first run does not, or the reverse. Only the seed may
    differ between the runs of one result. Each value may still be allowed on its own (TRN008).
    Why: a result's time to train is the olympic mean over its runs; runs with different recipes
    are different benchmarks, and mixing them lets a submitter tune each run to its seed.
    Bad: result_3.txt logs opt_base_learning_rate 0.02 where result_0.txt logs 0.01.
    Fix: train every run of a result with one command line (`levelfield train --runs N`).
    """
    keys = sorted(set(ctx.suite.hyperparameter_log_keys.values()))
    for training in training_results(sub):
        for first, log in runs_after_first(training):
            for key in keys:
                want, line = first.first(key), log.first(key)
                if want is None and line is None:
                    continue
                if want is None or line is None or not same_value(line.value, want.value, HYPERPARAMETER_RTOL):
                    yield Finding.at(
                        log.path,
                        f"{key} differs from the result's first run ({first.path})",
                        line=None if line is None else line.lineno,
                        found="not logged" if line is None else line.value,
                        expected="not logged" if want is None else want.value,
                        hint="train every run of a result with the same settings; only the seed differs",
                    )


@check("TRN010", "not-submission-profile", area="training")
def not_submission_profile(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run was produced with another profile than the one checked (the submission profile,
    unless `levelfield check --profile` names another), or on another slice of the training or eval
    data than that profile uses.
    Why: smoke and demo runs train on a slice for seconds or minutes; their numbers are not results.
    Bad: levelfield_profile "smoke", train_samples 1024.
    Fix: run `levelfield train` with the default submission profile.
    """
    for training, log in training_logs(sub):
        task = ctx.task(training.task)
        line = log.first(LK.PROFILE)
        if line is not None and line.value != ctx.profile:
            yield Finding.at(
                log.path,
                f"run made with another profile than the {ctx.profile} profile checked",
                line=line.lineno,
                found=line.value,
                expected=ctx.profile,
            )
            continue
        for key, want in (("train_samples", task.train_samples), ("eval_samples", task.eval_samples)):
            line = log.first(key)
            if line is not None and line.value != want:
                yield Finding.at(
                    log.path, f"{key} is not the whole dataset split", line=line.lineno, found=line.value, expected=want
                )


@check("TRN011", "init-too-long", area="training")
def init_too_long(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the untimed initialisation (init_start to init_stop: data, model build, compilation) took
    longer than the rules' init_limit_s.
    Why: MLPerf bounds untimed work so that training cannot hide inside initialisation.
    Bad: 45 minutes between init_start and init_stop where the limit is 30.
    Fix: move work out of initialisation, or shorten compilation.
    """
    for training, log in training_logs(sub):
        limit_s = ctx.task(training.task).training["init_limit_s"]
        start, stop = log.first("init_start"), log.first("init_stop")
        if start and stop and start.time_ms is not None and stop.time_ms is not None:
            took_s = (stop.time_ms - start.time_ms) / 1000
            if took_s > limit_s:
                yield Finding.at(
                    log.path,
                    "initialisation over the limit",
                    line=stop.lineno,
                    found=f"{took_s:.1f} s",
                    expected=f"<= {limit_s} s",
                )


@check("TRN025", "provisional-target", area="training")
def provisional_target(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training result for a task whose quality target the rules mark `provisional: true`,
    checked against a submittable profile.
    Why: a provisional target is a placeholder (every standard-size task's, until it is calibrated on
    an accelerator: docs/scale.md); a time to reach it ranks nothing and must not pass as a
    time-to-accuracy result.
    Bad: a submission-profile training result for ctr-dlrm-standard under rules 1.1.
    Fix: submit the task's inference results only, or wait for a rules version with a calibrated target.
    """
    if not ctx.suite.profiles[ctx.profile]["submittable"]:
        return  # smoke and demo runs are not results; TRN010 judges their profile
    for training in sub.trainings:
        quality = ctx.task(training.task).quality
        if quality["provisional"]:
            yield Finding.at(
                training.folder,
                "the rules' quality target for this task is provisional, not a time-to-accuracy target",
                found=f"target {quality['target']} (provisional: true)",
                expected="a task whose target is calibrated (provisional: false)",
                hint=f"rules {ctx.suite.version}, {ctx.task(training.task).path.name}: quality.provisional",
            )
