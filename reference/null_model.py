"""Framework `none`: the inference interface at a chosen cost, with no framework behind it.

    from levelfield.reference.null_model import CostModel, NullImplementation
    impl = NullImplementation(task, CostModel(per_call_us=20_000, per_sample_us=10))
    outputs = impl.predict(inputs)   # zeros [N, *OUTPUT_SHAPE] after 20 ms + N x 10 us

Two uses. At zero cost it measures the harness alone (LoadGen, the SUT, the
response rows: `make bench`, docs/benchmarks.md). At a set cost it stands in
for a system of another speed: a fixed cost per predict call (an accelerator's
launch and transfer latency) plus a cost per sample, so the runner's sizing can
be tested from a 10 us to a 10 ms model on one CPU (tests/test_speed_sweep.py).

The cost is spent mostly asleep, as a host waits for an accelerator, so the
GIL is free for LoadGen's and the SUT's Python threads as it is during a real
framework's compute; only the last SPIN_S is spent polling the clock, because
a sleep overshoots by tens of microseconds. `none` is never a result: the runner
marks its runs not submittable and the checker knows no framework `none`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from levelfield.ground.registry import task_module

if TYPE_CHECKING:  # annotations only, as in reference/interface.py
    from levelfield.rules.loader import Task

FRAMEWORK = "none"
SPIN_S = 100e-6  # the tail of each cost spent polling perf_counter: Linux sleeps overshoot by ~50-80 us


@dataclass(frozen=True)
class CostModel:
    """What one predict call costs: per_call_us + rows x per_sample_us microseconds."""

    per_call_us: float = 0.0
    per_sample_us: float = 0.0

    def __post_init__(self):
        for name in ("per_call_us", "per_sample_us"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")

    def seconds(self, rows: int) -> float:
        return (self.per_call_us + rows * self.per_sample_us) * 1e-6

    def spend(self, rows: int) -> None:
        """Take seconds(rows) of wall time: asleep for all but the last SPIN_S, then polling the clock."""
        duration_s = self.seconds(rows)
        if duration_s <= 0:
            return
        deadline = time.perf_counter() + duration_s
        if duration_s > SPIN_S:
            time.sleep(duration_s - SPIN_S)
        while time.perf_counter() < deadline:
            pass

    def as_dict(self) -> dict:
        return {"per_call_us": self.per_call_us, "per_sample_us": self.per_sample_us}


class NullImplementation:
    """The inference half of reference/interface.py's Implementation for any task, at `cost`."""

    framework = FRAMEWORK
    mode = "none"  # nothing is compiled or eager: result.json's compile_mode says so
    device = "cpu"

    def __init__(self, task: Task, cost: CostModel | None = None):
        spec = task_module(task, "model_spec")
        self.task_id = task.id
        self.output_shape = tuple(spec.OUTPUT_SHAPE)
        self.cost = cost or CostModel()

    @property
    def name(self) -> str:
        return f"{self.task_id}/{FRAMEWORK}"

    def version(self) -> str:
        return "0"

    def load(self, weights: dict[str, np.ndarray]) -> None:
        pass

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Zeros float32 [N, *OUTPUT_SHAPE] after the cost of N rows."""
        rows = len(next(iter(inputs.values())))
        self.cost.spend(rows)
        return np.zeros((rows, *self.output_shape), dtype=np.float32)
