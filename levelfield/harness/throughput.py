"""A training run's throughput, from the steps rank 0 timed: samples per second and the steady step time.

    timed = Throughput(global_batch_size=256)
    timed.add(steps=12, seconds=0.84)            # one call of impl.train_steps, host sync included
    timed.samples_per_s(), timed.step_time_ms()  # None before any step

Every timed step comes after the warm-up step that compiled it, so each is a
steady step; the evaluations are outside. With several processes the time is
rank 0's, which includes waiting for the slowest rank: the run's throughput.
samples_per_s counts global batches (all ranks' samples) over the summed time
of the timed calls; step_time_ms is the median of the calls' mean step times,
so a call slowed by the machine's other work moves it less than the mean.
StepClock times the calls (and, under rules 1.2, logs each as a step window).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from levelfield.ground import mllog_keys as LK
from levelfield.ground.step_windows import window_value

if TYPE_CHECKING:
    import numpy as np

    from levelfield.harness.runlog import NullLog, RunLog

_MS_PER_S = 1000.0


@dataclass
class Throughput:
    global_batch_size: int
    steps: int = 0
    seconds: float = 0.0
    step_seconds: list[float] = field(default_factory=list)  # each timed call's mean seconds per step

    def add(self, steps: int, seconds: float) -> None:
        if steps <= 0:
            return
        self.steps += steps
        self.seconds += seconds
        self.step_seconds.append(seconds / steps)

    def samples_per_s(self) -> float | None:
        if not self.steps or self.seconds <= 0:
            return None
        return self.global_batch_size * self.steps / self.seconds

    def step_time_ms(self) -> float | None:
        return statistics.median(self.step_seconds) * _MS_PER_S if self.step_seconds else None


class StepClock:
    """Times every call of train_steps inside the timed run; under rules 1.2 logs each as a step window.

        clock = StepClock(log, windows=True)
        steps, seconds = clock.call(impl.train_steps, rows, lrs, phase="timed", first_step=12)

    With windows, the two readings are the wall clock (time.time()), logged after the call as a start and
    a stop line whose time_ms are cut from the same readings (levelfield/ground/step_windows.py), so the
    seconds this returns, which the run's figures sum, are exactly what the log lets a checker recompute;
    nothing is logged between the readings. Without windows (rules 1.0, 1.1) the clock is perf_counter and
    nothing is logged.
    """

    def __init__(self, log: RunLog | NullLog, *, windows: bool):
        self.log = log
        self.windows = windows

    def call(
        self, train_steps: Callable, rows: np.ndarray, lrs: np.ndarray, *, phase: str, first_step: int
    ) -> tuple[int, float]:
        """(steps the framework ran, one loss each; the call's seconds, host sync included)."""
        if not self.windows:
            started = time.perf_counter()
            losses = train_steps(rows, lrs)  # on the host: the steps have run
            return len(losses), time.perf_counter() - started
        start_s = time.time()
        losses = train_steps(rows, lrs)
        stop_s = time.time()
        for write, key, reading in (
            (self.log.start, LK.STEP_WINDOW_START, start_s),
            (self.log.end, LK.STEP_WINDOW_STOP, stop_s),
        ):
            write(key, window_value(phase, first_step, len(losses), reading), time_ms=int(reading * _MS_PER_S))
        return len(losses), stop_s - start_s
