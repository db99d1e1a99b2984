"""The step benchmark's TensorFlow part: one training step split by timing compiled pieces, and its trace.

    parts = TfParts(impl, "ctr-dlrm")             # a compiled TensorFlow Implementation with its training data set
    parts.time_parts(rows, lrs)                   # {"forward": ms, "backward": ms, "optimizer": ms} per step
    parts.trace(rows[:1], lrs[:1], 10)            # top ops by self time of one real train_steps step

The compiled step is one XLA program: forward, backward and the optimizer are
fused together, and the profiler sees fused ops, not which part each belongs
to. So the parts are timed as separately compiled programs
(tf.function(jit_compile=True)), built from the implementation's own model,
loss object and training tensors, each called once per step as the real step
is, back to back, then synchronised:

- forward: gather the batch, the model in training mode, the loss;
- forward + backward: the same under a GradientTape, returning the loss and
  every gradient (so XLA cannot drop them);
- the full step: the implementation's own compiled `_step`.

backward = (forward + backward) - forward, optimizer = full - (forward +
backward). A separate program stores its gradients where the full step
fuses them straight into the update, so the split is approximate (a part can
even come out slightly negative); the full step's time is exact.
"""

from __future__ import annotations

import glob
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from benchmarks.trace_summary import TraceEvent, top_self_time

if TYPE_CHECKING:
    from levelfield.reference.interface import Implementation

METHOD = (
    "timed compiled pieces: tf.function(jit_compile=True) of the forward + loss, of forward + GradientTape "
    "gradients, and the implementation's own compiled _step, each called once per step back to back; "
    "backward = (fwd+bwd) - fwd, optimizer = full - (fwd+bwd), host = the real train_steps loop's time per "
    "step minus the full step's"
)
PROFILER = "tf.profiler.experimental trace (XPlane), XLA ops' self time summed over threads"


def _images_loss(impl: Implementation, images, labels, rows):
    """fmnist-resnet and seq-transformer: one input tensor (images or tokens) and integer labels."""
    return impl.loss_fn(tf.gather(labels, rows), impl.model(tf.gather(images, rows), training=True))


def _ctr_loss(impl: Implementation, dense, sparse, labels, rows):
    batch = {"dense": tf.gather(dense, rows), "sparse": tf.gather(sparse, rows)}
    return impl.loss_fn(tf.gather(labels, rows), impl.model(batch, training=True))


# Per task: its row index dtype and its loss; the step takes the implementation's training tensors
# (`impl.train_data`), as run_steps gives them.
TASKS: dict[str, tuple[type, Callable]] = {
    "fmnist-resnet": (np.int32, _images_loss),
    "seq-transformer": (np.int32, _images_loss),
    "ctr-dlrm": (np.int64, _ctr_loss),
}


class TfParts:
    def __init__(self, impl: Implementation, task_id: str):
        self.index_dtype, loss = TASKS[task_id]
        self.impl, self.data = impl, impl.train_data

        def forward(*args):
            return loss(impl, *args)

        def forward_backward(*args):
            variables = impl.model.trainable_variables
            with tf.GradientTape() as tape:
                value = loss(impl, *args)
            return value, tape.gradient(value, variables)

        self.forward = tf.function(forward, jit_compile=True)
        self.forward_backward = tf.function(forward_backward, jit_compile=True)

    def threads(self) -> dict:
        # 0: TensorFlow's default (one thread per core).
        return {
            "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        }

    def warm_up(self, rows: np.ndarray, lrs: np.ndarray) -> None:
        self.time_parts(rows, lrs)

    def _per_step_ms(self, call: Callable, rows: list, lrs: list) -> float:
        with tf.device(self.impl.device):
            started = time.perf_counter()
            outputs = [call(step_rows, lr) for step_rows, lr in zip(rows, lrs, strict=True)]
            tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, outputs[-1])
        return 1000 * (time.perf_counter() - started) / len(rows)

    def time_parts(self, rows: np.ndarray, lrs: np.ndarray) -> dict[str, float]:
        """ms per step of each part, over the steps of `rows` [steps, batch] with rates `lrs` [steps]."""
        with tf.device(self.impl.device):
            rows_t = [tf.constant(r) for r in np.asarray(rows, self.index_dtype)]
            lrs_t = [tf.constant(lr) for lr in np.asarray(lrs, np.float32)]
        forward = self._per_step_ms(lambda r, _: self.forward(*self.data, r), rows_t, lrs_t)
        forward_backward = self._per_step_ms(lambda r, _: self.forward_backward(*self.data, r), rows_t, lrs_t)
        full = self._per_step_ms(lambda r, lr: self.impl._step(*self.data, r, lr), rows_t, lrs_t)
        return {"forward": forward, "backward": forward_backward - forward, "optimizer": full - forward_backward}

    def trace(self, rows: np.ndarray, lrs: np.ndarray, limit: int) -> list[dict]:
        """Top `limit` ops by self time of the real train_steps over `rows` (one steady step)."""
        from tensorflow.tsl.profiler.protobuf import xplane_pb2

        with tempfile.TemporaryDirectory(prefix="levelfield-bench-tftrace-") as logdir:
            options = tf.profiler.experimental.ProfilerOptions(python_tracer_level=0)
            tf.profiler.experimental.start(logdir, options=options)
            try:
                self.impl.train_steps(rows, lrs)
            finally:
                tf.profiler.experimental.stop()
            space = xplane_pb2.XSpace()
            for path in glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True):
                with open(path, "rb") as f:
                    space.MergeFromString(f.read())
        events = []
        for plane in space.planes:
            names = {key: meta.name for key, meta in plane.event_metadata.items()}
            for line in plane.lines:
                line_start_ns = line.timestamp_ns
                for e in line.events:
                    events.append(
                        TraceEvent(
                            f"{plane.name}/{line.id}",
                            names.get(e.metadata_id, "?"),
                            line_start_ns + e.offset_ps / 1000,
                            e.duration_ps / 1000,
                        )
                    )
        return top_self_time(events, limit)
