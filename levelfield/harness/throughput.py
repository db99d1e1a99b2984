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
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

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
