"""The TensorFlow implementations' `train_steps` loop, shared: one compiled step per batch, one host sync per call.

    return run_steps(self._step, self.train_data, batch_indices, learning_rates, self.device, np.int32)
    self._step = train_step(self._gradients, self._apply, compiled)   # (*data, rows, lr) -> loss
    return run_steps(self._step, (), ..., batches=self.pipeline.batches(batch_indices, plans))  # a pipeline

The trainer calls `train_steps` with the chunks of its progress bar (the
first 1/20 of an epoch, later ones about a second of steps; progress.py), so a
call's fixed cost counts. No `tf.data` pipeline feeds the step: one per call
(from_tensor_slices + prefetch) cost 20-45 ms to set up on this CPU, which made
`levelfield train` 16% slower than one call per epoch on ctr-dlrm (benchmarks:
trainer). The indices and rates are tiny, so they are made tensors once per
call on the host and split there, and a Python loop calls the step per batch.
A task whose batches come from an input pipeline (image-resnet50-standard's
tf.data, built once and iterated across calls) hands its batches over instead.

`train_step(gradients, apply, compiled)` makes that step from its two halves: in one process the
whole step is one XLA program, as before; under `levelfield train --nproc N` (parallel.py beside this)
each rank runs it through the strategy, and only the gradient computation is compiled by XLA. The
gradients' all-reduce (Keras' apply_gradients under a strategy) cannot be in the XLA program on a CPU:
TF 2.21 refuses to compile a RING collective ("Only compiling NCCL/auto collective is supported") and
has no XLA kernel for the all-gather of sparse gradients, so the all-reduce and the optimizer update run
as an ordinary TensorFlow graph.

`determinism_settings(mode)` is every TensorFlow implementation's record of the switches that decide
whether a rerun repeats a run bit for bit; the trainer logs it (levelfield_determinism).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import tensorflow as tf

# TF 2.x exports enable_op_determinism() but not its reader; this is the function it pairs with.
from tensorflow.python.framework.config import is_op_determinism_enabled

from levelfield.reference.frameworks.tensorflow.keras_backend import keras
from levelfield.reference.frameworks.tensorflow.parallel import distributed, local_loss, replicated, tf_device
from levelfield.reference.interface import determinism_record, device_record

# fp32 means fp32 on a GPU too: TensorFlow runs float32 matmuls and convolutions in TF32 by default on
# Ampere and later, which the equivalence tolerances and the other frameworks' fp32 would not match. Off
# for this process as any TensorFlow implementation is imported; logged by determinism_settings. Mixed
# precision stays a Keras dtype policy (DTYPE_POLICIES). No effect on a CPU.
tf.config.experimental.enable_tensor_float_32_execution(False)


def run_steps(
    step: Callable[..., tf.Tensor],
    data: tuple[tf.Tensor, ...],
    batch_indices: np.ndarray,
    learning_rates: np.ndarray,
    device: str,
    index_dtype: type[np.integer],
    batches: Iterable[tuple[tf.Tensor, ...]] | None = None,
) -> np.ndarray:
    """float32 losses [steps]; `step(*data, rows, lr) -> loss` is the (compiled) train step.

    `batches`: one batch per row of `batch_indices`, in order, as an input pipeline yields them (a tuple of
    tensors each); the step then gets `step(*data, *batch, lr)` instead of the rows.
    """
    if len(batch_indices) == 0:
        return np.zeros(0, np.float32)
    if batches is None:
        rows = tf.unstack(tf.constant(np.asarray(batch_indices, index_dtype)))  # [batch] per step, on the host
        batches = [(step_rows,) for step_rows in rows]
    rates = tf.unstack(tf.constant(np.asarray(learning_rates, np.float32)))
    with tf.device(device):
        losses = [step(*data, *batch, lr) for batch, lr in zip(batches, rates, strict=True)]
    return tf.stack(losses).numpy().astype(np.float32)  # the one host sync: every loss at once


def train_step(
    gradients: Callable[..., tuple[tf.Tensor, list]],
    apply: Callable[[list, tf.Tensor], None],
    compiled: bool,
    input_signature: list[tf.TensorSpec] | None = None,
    sparse_gradients: bool = False,
) -> Callable[..., tf.Tensor]:
    """The train step `step(*data, rows, lr) -> loss` from `gradients(*data, rows) -> (loss, grads)` and
    `apply(grads, lr)` (the optimizer update); `compiled`: under tf.function(jit_compile=True).

    One process: one function, the whole step XLA-compiled. N processes: every rank runs the step in its
    replica; only `gradients` is XLA-compiled (the all-reduce inside `apply` stays out of XLA), and the
    loss returned is the rank's own mean loss. `gradients` must return the loss Keras divides by N under
    a strategy (tf_parallel.scale_loss_for_distribution where Keras does not). `sparse_gradients`: under a
    strategy, an embedding's gradient (tf.IndexedSlices) stays sparse and travels as an all-gather of the
    looked-up rows (else it is made dense and all-reduced: below).
    """

    def step(*args):
        *inputs, lr = args
        loss, grads = gradients(*inputs)
        apply(grads, lr)
        return loss

    if not distributed():
        return tf.function(step, jit_compile=True, input_signature=input_signature) if compiled else step

    def dense_gradients(*inputs):
        # An embedding's gradient (tf.IndexedSlices) would travel as two all-gathers of its rows; the
        # optimizers here densify it anyway (torch's Adam and AdamW update every row), and one dense
        # all-reduce of these small tables is faster: ctr-dlrm, 2 ranks, 24 -> 5 ms per step. Not so for
        # ctr-dlrm-standard (sparse_gradients): its plain SGD writes the looked-up rows only, and a dense
        # gradient would all-reduce its 1.07 GiB of tables every step, where the all-gather carries the
        # batch's rows (2,048 x 26 x 128 floats per rank, 27 MB).
        loss, grads = gradients(*inputs)
        if sparse_gradients:
            return loss, grads
        return loss, [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]

    compute = tf.function(dense_gradients, jit_compile=True) if compiled else dense_gradients

    def replica_step(*args):
        *inputs, lr = args
        loss, grads = compute(*inputs)
        apply(grads, lr)
        return local_loss(loss)

    run = replicated(replica_step)
    return tf.function(run, input_signature=input_signature) if compiled else run


def determinism_settings(mode: str, device: str | None = None) -> dict:
    """`Implementation.determinism_settings()` of every TensorFlow implementation, as TF reports it now.

    `op_determinism` is true after `tf.config.experimental.enable_op_determinism()` or with
    TF_DETERMINISTIC_OPS=1 in the environment (TF reads both into one state). A thread count of 0 is
    TF's default: the pool is sized at run time (one thread per core).
    """
    return determinism_record(
        mode,
        framework={
            "op_determinism": bool(is_op_determinism_enabled()),
            "tensor_float_32_execution": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
        },
        threads={
            "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        },
        device=device_facts(device or tf_device(None)),
    )


def device_facts(device: str) -> dict:
    """The TensorFlow device `device` ("CPU:0", "/device:GPU:N"): a GPU's name and how many TensorFlow sees,
    with the CUDA and cuDNN versions TF was built with (tf.sysconfig; TF does not report NCCL's: None); or
    the CPU."""
    gpus = tf.config.list_physical_devices("GPU")
    if "GPU" not in device.upper() or not gpus:
        return device_record("cpu", None, 1, None, None, None)
    index = int(device.rsplit(":", 1)[-1])
    details = tf.config.experimental.get_device_details(gpus[index])
    build = tf.sysconfig.get_build_info()
    runtime, cudnn = build.get("cuda_version"), build.get("cudnn_version")
    return device_record("cuda", details.get("device_name"), len(gpus), runtime, cudnn and str(cudnn), None)


# Rules precision -> Keras dtype policy (variables float32; computation float32, bfloat16 or float16).
# fp16 also wraps the optimizer in keras.optimizers.LossScaleOptimizer (loss_scaled).
DTYPE_POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
# fp16's first loss scale: Keras' default, which the PyTorch and JAX implementations use too
# (torch_steps.LOSS_SCALE_INIT says why).
LOSS_SCALE_INIT = 2.0**15


def loss_scaled(optimizer: keras.optimizers.Optimizer, precision: str) -> keras.optimizers.Optimizer:
    """Keras' idiom for fp16: the optimizer inside a LossScaleOptimizer (dynamic scale; the train step
    multiplies the loss by `optimizer.scale_loss`, apply_gradients unscales and skips a step whose
    gradients overflowed). The optimizer itself for fp32 and bf16, which need no scaling."""
    if precision != "fp16":
        return optimizer
    return keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=LOSS_SCALE_INIT)


def inner(optimizer: keras.optimizers.Optimizer) -> keras.optimizers.Optimizer:
    """The optimizer that updates the weights (under fp16's LossScaleOptimizer, the wrapped one)."""
    return getattr(optimizer, "inner_optimizer", optimizer)


def reset_loss_scale(optimizer: keras.optimizers.Optimizer) -> None:
    """fp16: the loss scale back to its start, as a fresh LossScaleOptimizer (same variables: no retrace)."""
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        optimizer.dynamic_scale.assign(optimizer.initial_scale)
        optimizer.step_counter.assign(0)


def precision_in_use(model: keras.Model, optimizer: keras.optimizers.Optimizer) -> str:
    """The rules' name of what runs, read back from the dtype policies of the model's layers, the dtypes of
    its variables and the optimizer (fp16: a LossScaleOptimizer): fp32, bf16 or fp16; anything else by the
    policies and dtypes found, which no rules allow."""
    # _flatten_layers: Keras 3's own walk over nested layers (it has no public one).
    policies = {layer.dtype_policy.name for layer in model._flatten_layers(include_self=False) if layer.weights}
    dtypes = {v.dtype for v in model.variables}
    scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    if dtypes == {"float32"} and len(policies) == 1 and scaled == (policies == {DTYPE_POLICIES["fp16"]}):
        for name, policy in DTYPE_POLICIES.items():
            if policies == {policy}:
                return name
    return ",".join(sorted(policies | dtypes | ({"loss scaling"} if scaled else set())))
