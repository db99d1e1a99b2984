"""The TensorFlow implementations' `train_steps` loop, shared: one compiled step per batch, one host sync per call.

    return run_steps(self._step, (self.train_images, self.train_labels), batch_indices, learning_rates,
                     self.device, np.int32)

The trainer calls `train_steps` with the chunks of its progress bar (the
first 1/20 of an epoch, later ones about a second of steps; progress.py), so a
call's fixed cost counts. No `tf.data` pipeline feeds the step: one per call
(from_tensor_slices + prefetch) cost 20-45 ms to set up on this CPU, which made
`levelfield train` 16% slower than one call per epoch on ctr-dlrm (benchmarks:
trainer). The indices and rates are tiny, so they are made tensors once per
call on the host and split there, and a Python loop calls the step per batch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf


def run_steps(
    step: Callable[..., tf.Tensor],
    data: tuple[tf.Tensor, ...],
    batch_indices: np.ndarray,
    learning_rates: np.ndarray,
    device: str,
    index_dtype: type[np.integer],
) -> np.ndarray:
    """float32 losses [steps]; `step(*data, rows, lr) -> loss` is the (compiled) train step."""
    if len(batch_indices) == 0:
        return np.zeros(0, np.float32)
    rows = tf.unstack(tf.constant(np.asarray(batch_indices, index_dtype)))  # [batch] per step, on the host
    rates = tf.unstack(tf.constant(np.asarray(learning_rates, np.float32)))
    with tf.device(device):
        losses = [step(*data, step_rows, lr) for step_rows, lr in zip(rows, rates, strict=True)]
    return tf.stack(losses).numpy().astype(np.float32)  # the one host sync: every loss at once
