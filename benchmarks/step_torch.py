"""The step benchmark's PyTorch part: one training step timed part by part, and its torch.profiler trace.

    parts = TorchParts(impl, "ctr-dlrm")          # a compiled PyTorch Implementation with its training data set
    parts.time_parts(rows, lrs)                   # {"forward": ms, "backward": ms, "optimizer": ms} per step
    parts.trace(rows[:1], lrs[:1], 10)            # top ops by self time of one real train_steps step

PyTorch runs each part of the step as its own call from Python, so each can be
timed directly: the step of reference/frameworks/pytorch/steps.py is replayed with a clock
read around the implementation's own `_loss(rows)` (gather + compiled forward
+ loss), `loss.backward()` (the compiled backward) and `optimizer.step()`
(whatever optimizer object the implementation holds: foreach, fused or
compiled). On CPU every PyTorch op has finished when the call returns; on CUDA
the device is synchronised before each clock read. Setting the rate,
`zero_grad` and the loop's own work fall in the host share (the real loop's
time minus these three).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from levelfield.reference.interface import Implementation

METHOD = (
    "timed around each part: the implementation's _loss(rows) (forward), loss.backward() (backward) and "
    "optimizer.step() (optimizer), replayed as reference/frameworks/pytorch/steps.py runs them, device synchronised "
    "before each clock read; host = the real train_steps loop's time per step minus these three"
)
PROFILER = "torch.profiler (CPU activities; CUDA too on a GPU), key_averages by self time"


class TorchParts:
    def __init__(self, impl: Implementation, task_id: str):
        self.impl = impl  # every task's PyTorch implementation has the same _loss(rows): task_id is not needed
        self.cuda = torch.device(impl.device).type == "cuda"

    def _sync(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def threads(self) -> dict:
        # Under load, PyTorch's OpenMP pool of one thread per core slows by 100x and more (spinning workers
        # wait for a core), which a result must show.
        return {"intra_op": torch.get_num_threads(), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}

    def warm_up(self, rows: np.ndarray, lrs: np.ndarray) -> None:
        self.time_parts(rows, lrs)

    def time_parts(self, rows: np.ndarray, lrs: np.ndarray) -> dict[str, float]:
        """ms per step of each part, over the steps of `rows` [steps, batch] with rates `lrs` [steps]."""
        impl, optimizer = self.impl, self.impl.optimizer
        indices = torch.from_numpy(np.asarray(rows, np.int64)).to(impl.device)
        totals = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
        impl.model.train()
        for step_rows, lr in zip(indices, np.asarray(lrs, np.float64), strict=True):
            for group in optimizer.param_groups:
                group["lr"] = float(lr)
            optimizer.zero_grad(set_to_none=True)
            started = self._sync()
            loss = impl._loss(step_rows)
            forward_done = self._sync()
            loss.backward()
            backward_done = self._sync()
            optimizer.step()
            step_done = self._sync()
            totals["forward"] += forward_done - started
            totals["backward"] += backward_done - forward_done
            totals["optimizer"] += step_done - backward_done
        return {part: 1000 * seconds / len(rows) for part, seconds in totals.items()}

    def trace(self, rows: np.ndarray, lrs: np.ndarray, limit: int) -> list[dict]:
        """Top `limit` ops by self time of the real train_steps over `rows` (one steady step)."""
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        with profile(activities=activities) as prof:
            self.impl.train_steps(rows, lrs)
        averages = prof.key_averages()
        key = "self_device_time_total" if self.cuda else "self_cpu_time_total"
        ranked = sorted((e for e in averages if getattr(e, key) > 0), key=lambda e: -getattr(e, key))[:limit]
        return [{"op": e.key, "self_ms": getattr(e, key) / 1000, "calls": e.count} for e in ranked]
