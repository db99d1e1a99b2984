"""A training log's step windows (rules 1.2) and the throughput figures they give: one reading for the trainer,
the checker, the leaderboard and `levelfield reproduce`.

    windows, problems = step_windows(log)        # [Window], [(line, why)] for what does not fit together
    figures = recompute(windows, global_batch_size=2048)
    figures.train_samples_per_s, figures.step_time_ms, figures.timed_steps, figures.warmup_steps

The trainer logs every call of train_steps inside run_start..run_stop as two
lines (levelfield_step_window_start / _stop, levelfield/ground/mllog_keys.py):
the call's phase (`warmup`: steps a throughput result trains before the timed
ones, excluded from the figure; `timed`), the run's index of its first step,
its steps, and the clock reading (time.time(), seconds) before and after it,
each line's time_ms cut from the same reading. The trainer computes its
samples/s and step time from the timed windows' readings (the same arithmetic
as `recompute`), so an honest log's figures equal the recomputation up to float
rounding, at any run length; the readings equal their lines' time_ms up to the
cut to whole milliseconds. A figure, a reading or a time_ms edited alone
disagrees with the others; all of them forged consistently cannot be told
from the log itself (docs/audit.md: `levelfield reproduce` replays the result).

`step_windows` never raises: a log is untrusted input, and what does not fit
(an unpaired line, a value of the wrong shape, steps out of order) is listed.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, MllogLine, finite_number, plain_int

WARMUP, TIMED = "warmup", "timed"
PHASES = (WARMUP, TIMED)
MS_PER_S = 1000.0


@dataclass(frozen=True)
class Window:
    """One call of train_steps: its phase, its first step (the run's index, from 0), its steps, its readings."""

    phase: str
    first_step: int
    steps: int
    start_s: float
    stop_s: float
    start: MllogLine
    stop: MllogLine

    @property
    def seconds(self) -> float:
        return self.stop_s - self.start_s


@dataclass(frozen=True)
class Figures:
    """What the windows give: the timed steps' global-batch samples per second over their summed time, the
    median of the timed windows' mean step times in ms (None without a timed step), and the step counts."""

    train_samples_per_s: float | None
    step_time_ms: float | None
    timed_steps: int
    warmup_steps: int
    timed_seconds: float


def window_value(phase: str, first_step: int, steps: int, time_s: float) -> dict:
    """The value of a window's start or stop line, as the trainer logs it."""
    return {"phase": phase, "first_step": first_step, "steps": steps, "time_s": time_s}


def _fields(line: MllogLine) -> tuple[str, int, int, float] | str:
    """(phase, first_step, steps, time_s) of a window line, or why its value does not have that shape."""
    value = line.value
    if not isinstance(value, dict):
        return "its value is not an object"
    phase, first, steps, time_s = (value.get(k) for k in ("phase", "first_step", "steps", "time_s"))
    if phase not in PHASES:
        return f"phase {phase!r} is not one of {', '.join(PHASES)}"
    if not (plain_int(first) and first >= 0 and plain_int(steps) and steps >= 1):
        return f"first_step {first!r} and steps {steps!r} are not a step index and a positive count"
    if not finite_number(time_s):
        return f"time_s {time_s!r} is not a clock reading in seconds"
    return phase, first, steps, float(time_s)


def step_windows(log: MllogFile) -> tuple[list[Window], list[tuple[MllogLine, str]]]:
    """The log's windows in order, and every problem in how its window lines fit together: a start without
    its stop (or the reverse), start and stop lines that disagree on the window, a window whose clock runs
    backwards, one that starts before the previous one stopped, steps that do not follow on from the
    previous window's, or a warm-up window after a timed one."""
    windows: list[Window] = []
    problems: list[tuple[MllogLine, str]] = []
    opened: tuple[MllogLine, tuple] | None = None
    for line in log.lines:
        if line.key not in (LK.STEP_WINDOW_START, LK.STEP_WINDOW_STOP):
            continue
        fields = _fields(line)
        if isinstance(fields, str):
            problems.append((line, f"{line.key}: {fields}"))
            opened = None
            continue
        if line.key == LK.STEP_WINDOW_START:
            if opened is not None:
                problems.append((opened[0], f"{LK.STEP_WINDOW_START} without its {LK.STEP_WINDOW_STOP}"))
            opened = (line, fields)
            continue
        if opened is None:
            problems.append((line, f"{LK.STEP_WINDOW_STOP} without a {LK.STEP_WINDOW_START} before it"))
            continue
        start, (phase, first, steps, start_s) = opened
        opened = None
        if fields[:3] != (phase, first, steps):
            problems.append((line, f"its phase, first_step and steps {fields[:3]} differ from its start's"))
            continue
        window = Window(phase, first, steps, start_s, fields[3], start, line)
        why = _out_of_order(window, windows[-1] if windows else None)
        if why:
            problems.append((line, why))
        windows.append(window)
    if opened is not None:
        problems.append((opened[0], f"{LK.STEP_WINDOW_START} without its {LK.STEP_WINDOW_STOP}"))
    return windows, problems


def _out_of_order(window: Window, previous: Window | None) -> str | None:
    if window.stop_s < window.start_s:
        return f"the clock runs backwards: time_s {window.stop_s!r} at the stop, {window.start_s!r} at the start"
    if previous is None:
        return None if window.first_step == 0 else f"the first window starts at step {window.first_step}, not 0"
    if window.start_s < previous.stop_s:
        return f"starts (time_s {window.start_s!r}) before the previous window stopped ({previous.stop_s!r})"
    if window.first_step != previous.first_step + previous.steps:
        return f"first_step {window.first_step} does not follow the previous window's steps (expected " + (
            f"{previous.first_step + previous.steps})"
        )
    if window.phase == WARMUP and previous.phase == TIMED:
        return "a warm-up window after a timed one"
    return None


def recompute(windows: list[Window], global_batch_size: int) -> Figures:
    """The figures the windows give: left-to-right sums, as the trainer's Throughput adds them."""
    timed = [w for w in windows if w.phase == TIMED]
    steps = sum(w.steps for w in timed)
    seconds = 0.0
    for w in timed:
        seconds += w.seconds
    rate = global_batch_size * steps / seconds if steps and seconds > 0 else None
    step_ms = statistics.median(w.seconds / w.steps for w in timed) * MS_PER_S if timed else None
    return Figures(rate, step_ms, steps, sum(w.steps for w in windows if w.phase == WARMUP), seconds)


def log_figures(log: MllogFile) -> Figures | None:
    """The figures a log's windows give at its logged global_batch_size; None when it has no windows, no
    usable batch size, or windows that do not fit together (TRN028 reports those)."""
    batch = log.value("global_batch_size")
    windows, problems = step_windows(log)
    if not windows or problems or not plain_int(batch) or batch < 1:
        return None
    return recompute(windows, batch)
