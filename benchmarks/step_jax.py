"""The step benchmark's JAX part: one training step split by timing jitted pieces, and its jax.profiler trace.

    parts = JaxParts(impl, "ctr-dlrm")            # a compiled JAX Implementation with its training data set
    parts.time_parts(rows, lrs)                   # {"forward": ms, "backward": ms, "optimizer": ms} per step
    parts.trace(rows[:1], lrs[:1], 10)            # top ops by self time of one real train_steps step

The jitted step is one XLA program, so, as for TensorFlow, the parts are
timed as separately jitted programs built from the implementation's own
model (`state.apply_fn`), Optax loss and device-resident training arrays,
each dispatched once per step as the real step is, back to back, then
blocked on:

- forward: gather the batch, apply the model in training mode, the loss;
- forward + backward: `jax.value_and_grad` of the same, returning every
  gradient (so XLA cannot drop them);
- the full step: the implementation's own jitted `_step` (its state donated
  and threaded through, as in run_steps).

backward = (forward + backward) - forward, optimizer = full - (forward +
backward); the same approximation as TensorFlow's (the full step fuses the
gradients into the update; the pieces store them).
"""

from __future__ import annotations

import glob
import os
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import numpy as np
import optax

from benchmarks.trace_summary import TraceEvent, top_self_time

if TYPE_CHECKING:
    from levelfield.reference.interface import Implementation

METHOD = (
    "timed jitted pieces: jax.jit of the forward + loss, of jax.value_and_grad of it, and the "
    "implementation's own jitted _step, each dispatched once per step back to back, then blocked on; "
    "backward = (fwd+bwd) - fwd, optimizer = full - (fwd+bwd), host = the real train_steps loop's time per "
    "step minus the full step's"
)
PROFILER = "jax.profiler trace (XPlane), XLA ops' self time summed over threads"


def _fmnist_loss(params, state, data, rows):
    images, labels = data
    logits, _ = state.apply_fn(
        {"params": params, "batch_stats": state.batch_stats}, images[rows], train=True, mutable=["batch_stats"]
    )
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels[rows]).mean()


def _seq_loss(params, state, data, rows):
    tokens, labels = data
    logits = state.apply_fn({"params": params}, tokens[rows])  # [B, 12, 10]
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels[rows]).mean()


def _ctr_loss(params, state, data, rows):
    dense, sparse, labels = data
    logits = state.apply_fn({"params": params}, dense[rows], sparse[rows])
    return optax.sigmoid_binary_cross_entropy(logits, labels[rows]).mean()


# Per task: the loss the implementation's _train_step differentiates; the step takes the implementation's
# training arrays (`impl.train_data`) as run_steps gives them, `_step(state, *data, rows, lr)`.
TASKS: dict[str, Callable] = {"fmnist-resnet": _fmnist_loss, "seq-transformer": _seq_loss, "ctr-dlrm": _ctr_loss}


class JaxParts:
    def __init__(self, impl: Implementation, task_id: str):
        loss = TASKS[task_id]
        self.impl, self.data = impl, impl.train_data
        self.forward = jax.jit(loss)
        self.forward_backward = jax.jit(jax.value_and_grad(loss))

    def threads(self) -> dict:
        # XLA's CPU client sizes its pools from the cores; XLA_FLAGS is where a user would change that.
        return {"XLA_FLAGS": os.environ.get("XLA_FLAGS")}

    def warm_up(self, rows: np.ndarray, lrs: np.ndarray) -> None:
        self.time_parts(rows, lrs)

    def _per_step_ms(self, call: Callable, rows: list, lrs: list) -> float:
        started = time.perf_counter()
        outputs = [call(step_rows, lr) for step_rows, lr in zip(rows, lrs, strict=True)]
        jax.block_until_ready(outputs)
        return 1000 * (time.perf_counter() - started) / len(rows)

    def _full_step(self, rows, lr):
        self.impl.state, loss = self.impl._step(self.impl.state, *self.data, rows, lr)
        return loss

    def time_parts(self, rows: np.ndarray, lrs: np.ndarray) -> dict[str, float]:
        """ms per step of each part, over the steps of `rows` [steps, batch] with rates `lrs` [steps]."""
        device = self.impl.state.step.device  # where the implementation keeps its state and data
        rows_d = [jax.device_put(r, device) for r in np.asarray(rows, np.int32)]
        lrs_d = [jax.device_put(lr, device) for lr in np.asarray(lrs, np.float32)]
        jax.block_until_ready((rows_d, lrs_d))
        state = self.impl.state
        forward = self._per_step_ms(lambda r, _: self.forward(state.params, state, self.data, r), rows_d, lrs_d)
        forward_backward = self._per_step_ms(
            lambda r, _: self.forward_backward(state.params, state, self.data, r), rows_d, lrs_d
        )
        full = self._per_step_ms(self._full_step, rows_d, lrs_d)
        return {"forward": forward, "backward": forward_backward - forward, "optimizer": full - forward_backward}

    def trace(self, rows: np.ndarray, lrs: np.ndarray, limit: int) -> list[dict]:
        """Top `limit` ops by self time of the real train_steps over `rows` (one steady step)."""
        with tempfile.TemporaryDirectory(prefix="levelfield-bench-jaxtrace-") as logdir:
            with jax.profiler.trace(logdir):
                self.impl.train_steps(rows, lrs)
            events = []
            for path in glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True):
                for plane in jax.profiler.ProfileData.from_file(path).planes:
                    for line in plane.lines:
                        events += [
                            TraceEvent(f"{plane.name}/{line.name}", e.name, e.start_ns, e.duration_ns)
                            for e in line.events
                            if not e.name.startswith("$")  # the Python tracer's frames: the host, not ops
                        ]
        return top_self_time(events, limit)
