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
from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground.parse import finite_number, plain_int
from levelfield.ground.submission.records import Submission

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
    """What: an epoch_stop whose metadata.epoch_num is not the epoch of the last epoch_start before it; an
    eval_start, eval_accuracy or eval_stop whose epoch_num is absent, not a number, not within that epoch,
    or not the rules' next evaluation point (rules 1.0: every k-th epoch, an integer; rules 1.1: every N
    samples within an epoch and at its end, the fraction of epochs trained, levelfield.ground.eval_cadence).
    Why: epochs to target (the convergence test, TRN009, and the leaderboard) is read from the
    epoch_num of the eval that ended the run; an edited one fakes faster convergence.
    Bad: the last eval_accuracy says epoch_num 1 where the epoch_start before it says 2; an eval at
    epoch_num 2.25 where the rules evaluate at 2.5.
    Fix: produce logs with `levelfield train`; never merge or edit logs.
    """
    for training, log in training_logs(sub):
        # Against the cadence only where the epochs are 1, 2, 3 ...: renumbered epochs are TRN014's.
        numbers = [line.metadata.get("epoch_num") for line in log.all("epoch_start")]
        consecutive = all(plain_int(n) and n == i for i, n in enumerate(numbers, start=1))
        rules = ctx.task(training.task).training
        points = _eval_points(log, rules) if consecutive else None
        fractional = "eval_every_samples" in rules  # rules 1.1: epoch_num a fraction of epochs trained
        seen = dict.fromkeys(EVAL_LINES, 0)  # eval lines of each key so far
        stop = log.first("run_stop")  # an eval after it is TRN013's, not an extra evaluation here
        opened = None  # the epoch_start line the lines that follow belong to
        for line in log.lines:
            if line.key == "epoch_start":
                opened = line
                continue
            if line.key not in EPOCH_LINES:
                continue
            problem = _epoch_num_problem(line, opened, fractional)
            timed = stop is None or line.lineno < stop.lineno
            if line.key in EVAL_LINES and points is not None and timed:
                # Every eval line takes its place in the sequence, a faulty one too, so that one edited
                # line is one finding and the evaluations after it are judged against their own points.
                k = seen[line.key]
                seen[line.key] += 1
                want = points[k] if k < len(points) else None
                if problem is None and (want is None or line.metadata["epoch_num"] != want):
                    problem = (
                        f"not the rules' evaluation {k + 1}",
                        "no further evaluation" if want is None else want,
                    )
            if problem is None:
                continue
            text, expected = problem
            yield Finding.at(
                log.path,
                f"{line.key} {text}",
                line=line.lineno,
                found=line.metadata.get("epoch_num", "absent"),
                expected=expected,
                hint=_PRODUCE,
            )


# The lines of one evaluation: each carries the epoch_num of the cadence point it evaluates.
EVAL_LINES = ("eval_start", "eval_accuracy", "eval_stop")


def _epoch_num_problem(line, opened, fractional: bool) -> tuple[str, object] | None:
    """(problem, expected) when an epoch line's epoch_num does not fit the epoch it is logged in."""
    if "epoch_num" not in line.metadata:
        return "epoch_num is absent", "an epoch_num"
    found = line.metadata["epoch_num"]
    whole_epoch = line.key == "epoch_stop" or not fractional  # names its epoch, not a point inside it
    if whole_epoch:
        if not plain_int(found):
            return "epoch_num is not an integer", "an integer epoch_num"
    elif not finite_number(found):
        return "epoch_num is not a number", "a number of epochs"
    if opened is None:
        return "no epoch_start before it", f"an epoch_start with epoch_num {found} before it"
    want = opened.metadata.get("epoch_num")
    if not plain_int(want):
        return None  # the epoch_start's own number is TRN014's
    if whole_epoch:
        return None if found == want else (f"not the epoch of the epoch_start at line {opened.lineno}", want)
    if want - 1 < found <= want:
        return None
    return f"not within the epoch of the epoch_start at line {opened.lineno}", f"in ({want - 1}, {want}]"


def _eval_points(log, training: dict) -> list[int | float] | None:
    """The epoch_num of every evaluation the rules' cadence sets for this run, in order; None when the
    log's train_samples or global_batch_size cannot say (TRN001 and TRN010 report those)."""
    from levelfield.ground.eval_cadence import EvalCadence

    samples, batch = log.value("train_samples"), log.value("global_batch_size")
    if not (plain_int(samples) and plain_int(batch) and 0 < batch <= samples < 2**40):
        return None
    try:
        cadence = EvalCadence.from_rules(training, samples // batch, batch)
    except ValueError:
        return None
    per_epoch = samples // cadence.every_samples + 1 if cadence.fractional else 1
    if cadence.max_epochs * per_epoch > 10**6:
        return None  # an absurd number of evaluations: not worth listing; the other checks name the sizes
    return [num for _, num in cadence.points()]


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
