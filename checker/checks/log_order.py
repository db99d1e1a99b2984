"""Training log order checks: the MLLOG events of every result file in MLPerf's order, one rule per code.

Time to train is run_stop minus run_start and epochs to target is the epoch_num
of the eval that ended the run, so every check here guards one of those two
numbers. They were one code, TRN002, until it was split so that a finding names
the rule it breaks and `--ignore` can skip one rule (findings.RETIRED).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from levelfield.checker.checks.training import training_logs
from levelfield.checker.engine import Context
from levelfield.checker.findings import Finding, check
from levelfield.checker.records import Submission
from levelfield.ground.parse import plain_int

# The interval events every log opens and closes, in the order MLPerf's logging rules require.
EVENT_ORDER = ("init_start", "init_stop", "run_start", "run_stop")
# The events of timed work: they must fall between run_start and run_stop.
TIMED_EVENTS = ("epoch_start", "eval_accuracy")
# The lines that belong to the epoch the last epoch_start opened and name it in metadata.epoch_num.
EPOCH_LINES = ("epoch_stop", "eval_start", "eval_accuracy", "eval_stop")
_PRODUCE = "produce logs with `levelfield train`; never merge or edit logs"


@check("TRN012", "events-out-of-order", area="training")
def events_out_of_order(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the first init_start, init_stop, run_start and run_stop of a log are not in that order.
    Why: time to train is run_stop minus run_start and initialisation is untimed; a run_start before
    init_stop, or a run_stop before run_start, moves work out of the timed interval.
    Bad: run_start logged before init_stop.
    Fix: produce logs with `levelfield train`; never merge or edit logs.
    """
    for _, log in training_logs(sub):
        present = [(key, line) for key in EVENT_ORDER if (line := log.first(key)) is not None]  # absent: TRN001
        for (key_a, a), (key_b, b) in pairwise(present):
            if a.lineno > b.lineno:
                yield Finding.at(
                    log.path,
                    f"{key_b} comes before {key_a}",
                    line=b.lineno,
                    found=f"{key_b} at line {b.lineno}, {key_a} at line {a.lineno}",
                    expected=" < ".join(EVENT_ORDER),
                    hint=_PRODUCE,
                )


@check("TRN013", "event-outside-run", area="training")
def event_outside_run(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: an epoch_start or eval_accuracy line comes before run_start or after run_stop.
    Why: epochs and evals are the timed work; an epoch before run_start is training nobody timed, an
    eval after run_stop a quality the timed run never reached.
    Bad: an eval_accuracy line after run_stop.
    Fix: produce logs with `levelfield train`; never merge or edit logs.
    """
    for _, log in training_logs(sub):
        start, stop = log.first("run_start"), log.first("run_stop")
        for key in TIMED_EVENTS:
            for line in log.all(key):
                if (start and line.lineno < start.lineno) or (stop and line.lineno > stop.lineno):
                    yield Finding.at(
                        log.path,
                        f"{key} outside run_start..run_stop",
                        line=line.lineno,
                        found=f"line {line.lineno}",
                        expected=f"between lines {start.lineno if start else '?'} and {stop.lineno if stop else '?'}",
                        hint=_PRODUCE,
                    )


@check("TRN014", "epochs-not-consecutive", area="training")
def epochs_not_consecutive(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the epoch_start lines' epoch_num are not 1, 2, 3 ... in order. Only the first break is reported.
    Why: epochs to target (the convergence test, TRN009) and the hyperparameter schedule are read from
    epoch numbers; a skipped or repeated epoch means runs were merged or edited.
    Bad: epoch_start epoch_num 3 following epoch 1.
    Fix: produce logs with `levelfield train`; never merge or edit logs.
    """
    for _, log in training_logs(sub):
        for i, line in enumerate(log.all("epoch_start"), start=1):
            number = line.metadata.get("epoch_num")
            if not (plain_int(number) and number == i):  # true is not epoch 1
                yield Finding.at(
                    log.path,
                    "epoch numbers not consecutive from 1",
                    line=line.lineno,
                    found=line.metadata.get("epoch_num"),
                    expected=i,
                    hint=_PRODUCE,
                )
                break


@check("TRN019", "epoch-number-mismatch", area="training")
def epoch_number_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: an epoch_stop, eval_start, eval_accuracy or eval_stop line whose metadata.epoch_num is
    absent, not an integer, or not the epoch_num of the last epoch_start before it.
    Why: epochs to target (the convergence test, TRN009, and the leaderboard) is read from the
    epoch_num of the eval that ended the run; an edited one fakes faster convergence.
    Bad: the last eval_accuracy says epoch_num 1 where the epoch_start before it says 2.
    Fix: produce logs with `levelfield train`; never merge or edit logs.
    """
    for _, log in training_logs(sub):
        opened = None  # the epoch_start line the lines that follow belong to
        for line in log.lines:
            if line.key == "epoch_start":
                opened = line
                continue
            if line.key not in EPOCH_LINES:
                continue
            found = line.metadata.get("epoch_num")
            if "epoch_num" not in line.metadata or not plain_int(found):
                problem, expected = "epoch_num is absent or not an integer", "an integer epoch_num"
            elif opened is None:
                problem, expected = "no epoch_start before it", f"an epoch_start with epoch_num {found} before it"
            elif not plain_int(want := opened.metadata.get("epoch_num")):
                continue  # the epoch_start's own number is TRN014's
            elif found != want:
                problem, expected = f"not the epoch of the epoch_start at line {opened.lineno}", want
            else:
                continue
            yield Finding.at(
                log.path,
                f"{line.key} {problem}",
                line=line.lineno,
                found="absent" if "epoch_num" not in line.metadata else found,
                expected=expected,
                hint=_PRODUCE,
            )


@check("TRN015", "timestamp-backwards", area="training")
def timestamp_backwards(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a line's time_ms is earlier than the line before it. Only the first step back is reported.
    Why: time to train and the initialisation time are differences of timestamps; a clock that runs
    backwards (an edited line, or logs of two runs merged) makes them meaningless.
    Bad: an epoch_stop time_ms an hour before its epoch_start.
    Fix: produce logs with `levelfield train`; never merge or edit logs.
    """
    for _, log in training_logs(sub):
        times = [(line.lineno, line.time_ms) for line in log.lines if line.time_ms is not None]
        for (_, t0), (lineno, t1) in pairwise(times):
            if t1 < t0:
                yield Finding.at(
                    log.path,
                    "timestamp earlier than the line before",
                    line=lineno,
                    found=t1,
                    expected=f">= {t0}",
                    hint=_PRODUCE,
                )
                break
