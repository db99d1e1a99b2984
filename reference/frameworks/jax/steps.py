"""What the JAX implementations share: the `train_steps` loop (one jitted step per batch, one host sync
per call), the `TrainState` their module-level steps take, `host_rows`, the host-side cut of a chunked
predict's padded outputs, and `determinism_settings`.

    self.state, losses = run_steps(self._step, self.state, self.train_data, batch_indices, learning_rates, self.place)
    self.state, losses = run_steps(self._step, self.state, (), ..., batches=self.pipeline.batches(...))  # a pipeline
    return host_rows([forward(params, pad_rows(x[a:b], size)) for a, b, size in chunks], chunks)

The trainer calls `train_steps` with chunks of varying length (the progress
bar's chunks, the last one shorter). Each step's row indices and learning
rate are sliced on the host and put on the device one step at a time:
indexing a device array (`rows[step]`) or stacking the losses with `jnp.stack`
compiles a small XLA program for every new chunk length, and those
compilations would land inside run_start..run_stop and be timed as training
(`tests/test_no_recompile.py` checks that none happens). `place`
(reference/frameworks/jax/parallel.py) puts them on the one device, or, with N
processes, makes this rank's rows its part of the global batch. A task whose
batches come from an input pipeline (image-resnet50-standard) hands its
batches over instead, each placed the same way.

`TrainState` is Flax's (params, optimizer state, `apply_fn`, `tx`) with the
loss beside them (`loss_fn`), all three static: each implementation's hooks
build them (`_build_model`, `_build_optimizer`, `_build_loss`), and its
module-level `_train_step(state, *data, rows, lr)` finds everything in the
state, as the Flax examples' `train_step(state, batch)` does. The state's
static parts are part of the jit cache's key: an implementation whose hooks
return the same objects in every instance (seq-transformer's) shares one
compiled step among them.

`determinism_settings(mode)` is every JAX implementation's record of the switches that decide whether
a rerun repeats a run bit for bit; the trainer logs it (levelfield_determinism).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from flax import struct
from flax.training import train_state
from flax.training.dynamic_scale import DynamicScale

from levelfield.ground.accelerators import cuda_version_text
from levelfield.reference.frameworks.jax.parallel import DataParallel, OneDevice
from levelfield.reference.interface import determinism_record, device_record


class TrainState(train_state.TrainState):
    """Flax's TrainState with the training loss `loss_fn(logits, labels) -> mean loss`, static as `apply_fn`
    and `tx` are (an implementation's `_build_loss`)."""

    loss_fn: Callable = struct.field(pytree_node=False)


def softmax_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean softmax cross-entropy of logits [..., classes] against int labels [...] (fmnist-resnet's over the
    batch, seq-transformer's over every position of it)."""
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def run_steps(
    step: Callable[..., tuple[Any, jax.Array]],
    state: Any,
    data: tuple[jax.Array, ...],
    batch_indices: np.ndarray,
    learning_rates: np.ndarray,
    place: OneDevice | DataParallel,
    batches: Iterable[tuple[np.ndarray, ...]] | None = None,
) -> tuple[Any, np.ndarray]:
    """(state after every step, float32 losses [steps]); `step(state, *data, rows, lr) -> (state, loss)` is the
    (jitted) train step, `data` the training arrays it gathers its rows from.

    `batches`: one batch per row of `batch_indices`, in order, as an input pipeline yields them (a tuple of
    host arrays each, placed as the rows would be); the step then gets `step(state, *data, *batch, lr)`.
    """
    rows = np.asarray(batch_indices, np.int32)  # [steps, batch]; the training sets have < 2**31 rows
    lrs = np.asarray(learning_rates, np.float32)  # [steps]
    if batches is None:
        batches = ((step_rows,) for step_rows in rows)
    losses = []
    for batch, lr in zip(batches, lrs, strict=True):
        state, loss = step(state, *data, *(place.batch(part) for part in batch), place.replicate(lr))
        losses.append(loss)
    # The one host sync of the call: every loss at once, as numpy (no device-side stack to compile).
    return state, np.asarray(jax.device_get(losses), np.float32).reshape(len(losses))


def host_rows(outputs: list, chunks: list[tuple[int, int, int]]) -> np.ndarray:
    """float32 numpy rows of a chunked predict: each padded device output fetched, then cut to its real rows.

    `outputs[i]` is the jitted predict's output for `chunks[i]` = (start, stop, padded size). The
    padding is cut on the host: slicing a device array to `stop - start` rows compiles a small XLA
    program per distinct length, and the runner's Server batches take every length up to their cap,
    so those compilations would land inside LoadGen's timed run (tests/test_no_recompile.py).
    """
    fetched = jax.device_get(outputs)
    return np.concatenate(
        [np.asarray(rows)[: stop - start] for rows, (start, stop, _) in zip(fetched, chunks, strict=True)]
    ).astype(np.float32, copy=False)


def determinism_settings(mode: str, device: jax.Device | None = None) -> dict:
    """`Implementation.determinism_settings()` of every JAX implementation, as JAX reports it now.

    XLA's switches live in XLA_FLAGS (e.g. --xla_gpu_deterministic_ops=true), logged as set ("" when
    unset); JAX's own are config values. XLA's CPU client has no call that reports its thread pool; it
    sizes it by the CPUs this process may run on (tsl::port::MaxParallelism), logged here.
    """
    return determinism_record(
        mode,
        framework={
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "jax_default_matmul_precision": jax.config.jax_default_matmul_precision,
            "jax_enable_x64": bool(jax.config.jax_enable_x64),
        },
        threads={"schedulable_cpus": len(os.sched_getaffinity(0))},
        device=device_facts(device or jax.local_devices()[0]),
    )


def device_facts(device: jax.Device) -> dict:
    """The JAX device `device`: a GPU's kind and how many this process sees, with the CUDA runtime and cuDNN
    versions jaxlib's CUDA plugin reports (JAX has no public call for NCCL's: None); or the CPU."""
    if device.platform != "gpu":
        return device_record("cpu", None, 1, None, None, None)
    runtime, cudnn = _cuda_versions()
    return device_record("cuda", device.device_kind, len(jax.local_devices(backend="gpu")), runtime, cudnn, None)


def _cuda_versions() -> tuple[str | None, str | None]:
    """(CUDA runtime, cuDNN) as jaxlib's CUDA plugin reports them (e.g. "13.0", "91900"); (None, None)
    where this jaxlib has no such module: it is private API (jax._src.lib.cuda_versions), read defensively."""
    try:
        from jax._src.lib import cuda_versions  # private; absent or None in a CPU-only jaxlib

        runtime = cuda_version_text(cuda_versions.cuda_runtime_get_version())  # 13000 -> "13.0", as torch says it
        return runtime, str(cuda_versions.cudnn_get_version())
    except Exception:  # ImportError, None module, or a renamed function in another jaxlib
        return None, None


# Rules precision -> the Flax modules' computation dtype (param_dtype stays float32: float32 master weights).
# fp16 adds Flax's dynamic loss scale (loss_scale).
COMPUTE_DTYPES = {"fp32": jnp.float32, "bf16": jnp.bfloat16, "fp16": jnp.float16}
# fp16's first loss scale: Keras' default, which the PyTorch and TensorFlow implementations use too
# (torch_steps.LOSS_SCALE_INIT says why); growth and backoff are Flax's defaults, the same as theirs.
LOSS_SCALE_INIT = 2.0**15


def loss_scale(precision: str) -> DynamicScale | None:
    """fp16: Flax's dynamic loss scale (flax.training.dynamic_scale, the Flax ImageNet example's fp16
    path), carried in the train state; None for fp32 and bf16, which need no scaling."""
    return DynamicScale(scale=jnp.float32(LOSS_SCALE_INIT)) if precision == "fp16" else None


def scaled_value_and_grad(loss_fn: Callable, dynamic_scale: DynamicScale | None, params: Any) -> tuple:
    """(dynamic scale after the step, gradients finite?, (loss, aux), gradients) of `loss_fn(params) ->
    (loss, aux)`. Under fp16's scale the loss is multiplied before differentiating and the gradients
    divided after, and the scale adapts; without one it is jax.value_and_grad."""
    if dynamic_scale is None:
        value, grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        return None, True, value, grads
    return tuple(dynamic_scale.value_and_grad(loss_fn, has_aux=True)(params))


def keep_if_finite(finite: Any, new: Any, old: Any) -> Any:
    """`new` where the step's gradients were finite, else `old`: how the Flax example skips an fp16 step
    that overflowed (jnp.where, no branch in the compiled step). With no loss scale, `new` as it is."""
    if finite is True:
        return new
    return jax.tree.map(lambda a, b: jnp.where(finite, a, b), new, old)


def precision_in_use(model: nn.Module, params: Any, dynamic_scale: DynamicScale | None) -> str:
    """The rules' name of what runs, read back from the module's dtype, its parameters' dtypes and the
    loss scale: fp32, bf16 (float32 parameters, bfloat16 computation) or fp16 (float16 computation with a
    dynamic loss scale); anything else by its dtypes, which no rules allow."""
    dtypes = {jnp.dtype(p.dtype) for p in jax.tree.leaves(params)}
    compute = jnp.dtype(model.dtype)
    scaled = dynamic_scale is not None
    if dtypes <= {jnp.dtype(jnp.float32)} and scaled == (compute == jnp.dtype(jnp.float16)):
        for name, dtype in COMPUTE_DTYPES.items():
            if jnp.dtype(dtype) == compute:
                return name
    unscaled = {"float16 without loss scaling"} if compute == jnp.dtype(jnp.float16) and not scaled else set()
    return ",".join(sorted({str(d) for d in dtypes | {compute}} | unscaled))
