"""What a training result's MLLOG lines say: its status, its epochs and its time to target.

    from levelfield.ground.training_log import epochs_to_target, time_to_target_s, training_score
    seconds = time_to_target_s(log)       # run_start -> run_stop of a successful run, else None
    score = training_score(logs, drop=1)  # the scored result of a result's runs (stats.time_to_train)

`log` is a parsed MLLOG file (`levelfield.ground.parse.MllogFile`). The
checker's TRN checks and the leaderboard read logs through these functions,
so a verdict and a leaderboard cell cannot disagree about a run.
"""

from __future__ import annotations

from collections.abc import Iterable

from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, MllogLine, finite_number
from levelfield.ground.stats import time_to_train

MS_PER_S = 1000.0
# run_stop's reason in the log of `levelfield train --throughput-only` (status aborted): N steps, no evaluation
THROUGHPUT_ONLY_REASON = "throughput only"


def run_status(log: MllogFile) -> str | None:
    line = log.last("run_stop")
    return None if line is None else line.metadata.get("status")


def throughput_only_mark(log: MllogFile) -> tuple[MllogLine, str] | None:
    """(the line, what it says) that marks a throughput-only run's log: its levelfield_throughput_only line,
    else a run_stop with reason "throughput only" (a log whose key line was removed); None for any other log.
    Such a run trained N steps with no evaluation and no target: never a time-to-accuracy result."""
    line = log.first(LK.THROUGHPUT_ONLY)
    if line is not None:
        return line, f"{LK.THROUGHPUT_ONLY} {line.value!r}"
    for stop in log.all("run_stop"):
        if isinstance(stop.metadata, dict) and stop.metadata.get("reason") == THROUGHPUT_ONLY_REASON:
            return stop, f"run_stop with reason {THROUGHPUT_ONLY_REASON!r}"
    return None


def reaches_target(value: object, target: float) -> bool:
    """Whether an eval_accuracy value reaches the rules' quality target: the trainer's stop rule
    (every task's metric is higher-is-better), with anything but a finite number never reaching it."""
    return finite_number(value) and value >= target


def evals_before_stop(log: MllogFile) -> list[MllogLine]:
    """The eval_accuracy lines before the first run_stop (all of them when there is no run_stop)."""
    stop = log.first("run_stop")
    return [line for line in log.all("eval_accuracy") if stop is None or line.lineno < stop.lineno]


def last_eval_before_stop(log: MllogFile) -> MllogLine | None:
    """The last eval_accuracy line before run_stop (None when there is none)."""
    evals = evals_before_stop(log)
    return evals[-1] if evals else None


def first_eval_at_target(log: MllogFile, target: float) -> MllogLine | None:
    """The first eval_accuracy line before run_stop that reaches `target`: where the trainer stops
    the run with status success (None when no eval reached it)."""
    return next((line for line in evals_before_stop(log) if reaches_target(line.value, target)), None)


def epochs_to_target(log: MllogFile) -> int | float | None:
    """The epoch_num of the eval that ended a successful run (what reference convergence points count):
    an integer epoch under rules 1.0, the fraction of epochs trained under 1.1's sample cadence."""
    line = last_eval_before_stop(log)
    epoch = None if line is None else line.metadata.get("epoch_num")
    # An absurd epoch (10**29) is TRN019's to report; here it would overflow the t-test's arithmetic.
    return epoch if finite_number(epoch) and 0 < epoch < 2**31 else None


def time_to_target_s(log: MllogFile) -> float | None:
    """run_stop time_ms - run_start time_ms in s (MLPerf's timed span); None unless the run succeeded."""
    start, stop = log.first("run_start"), log.first("run_stop")
    if run_status(log) != "success" or start is None or stop is None:
        return None
    if not (finite_number(start.time_ms) and finite_number(stop.time_ms)):
        return None
    return (stop.time_ms - start.time_ms) / MS_PER_S


def training_score(logs: Iterable[MllogFile], drop: int) -> dict:
    """The scored result of one training result's logs (in run order): levelfield.ground.stats.time_to_train,
    a run that did not succeed counting as the slowest. The leaderboard shows exactly this."""
    return time_to_train([time_to_target_s(log) for log in logs], drop)
