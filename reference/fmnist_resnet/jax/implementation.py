"""fmnist-resnet in JAX: Flax linen model + Optax SGD in a TrainState, train step under jax.jit.

    from levelfield.reference.fmnist_resnet.jax.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": the same functions, not jitted
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))

The optimizer is optax.chain(add_decayed_weights(wd), sgd(lr, momentum)) under
inject_hyperparams: g + wd * p, then trace (buf = momentum * buf + g, from a
zero buffer, so buf = g at step 1), then p - lr * buf, as torch.optim.SGD.
The learning rate is written into the optimizer state inside the jitted step,
from an argument, so changing it never recompiles.

With N processes (`levelfield train --nproc N`, reference/frameworks/jax/parallel.py)
the step runs on global arrays: state and training set replicated, the batch
split over the processes' devices, XLA all-reducing the gradient. Batch norm
is then global on every device type: the batch axis flax's BatchNorm averages
over is the global batch's, so XLA all-reduces the statistics too and the
step is one process's step (tests/test_multiprocess_step.py). That is JAX's
idiom (the model sees the global batch; no per-device code, no
SyncBatchNorm); per-process statistics would need the step rewritten under
shard_map with a per-device batch axis. predict uses this process's copy.

Precision (rules 1.1: fp32, bf16, fp16) is Flax's: the modules' `dtype`
(bfloat16 or float16 compute, float32 params, model.py), and for fp16 Flax's
DynamicScale in the train state, as the Flax ImageNet example
(reference/frameworks/jax/steps.py); predict uses the same module.

As in the Flax examples, the step and predict are module-level functions
(`_train_step`, `_predict_batch`) over a TrainState that carries the model's
`apply_fn`, the optimizer `tx` and the loss (reference/frameworks/jax/steps.py); `__init__`
jits them. `_batch_step(state, x, y, lr)` is the step on one batch, whether
gathered from the resident set (`_train_step(..., rows, lr)`, here) or cut by
an input pipeline.

image-resnet50-standard subclasses this class and overrides only what
differs, through the hooks that `__init__` calls, as every implementation has
them (docs/architecture.md, "Interfaces"): `_build_model(recipe)`, the Flax
module (here ResNetSmall), and `_build_loss(recipe)`, `loss_fn(logits,
labels)` (here mean softmax cross-entropy on integer labels);
`_build_optimizer(recipe)` is the optax transformation. The rest of `__init__`
serves both: the device and placement, the jitted step and forward;
`_new_state(variables)` makes the TrainState at load.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax
from flax import linen as nn

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.common.inputs import pad_rows, predict_chunks
from levelfield.reference.fmnist_resnet.jax.model import ResNetSmall
from levelfield.reference.fmnist_resnet.jax.weights import to_neutral, to_variables
from levelfield.reference.frameworks.jax import steps as jax_steps
from levelfield.reference.frameworks.jax.base import FrameworkImplementation
from levelfield.reference.frameworks.jax.optimizers import sgd_with_l2
from levelfield.reference.frameworks.jax.steps import (
    COMPUTE_DTYPES,
    host_rows,
    keep_if_finite,
    loss_scale,
    precision_in_use,
    scaled_value_and_grad,
    softmax_cross_entropy,
)


class TrainState(jax_steps.TrainState):
    batch_stats: Any  # BN running mean / var, as in the Flax ImageNet example
    dynamic_scale: Any = None  # fp16's loss scale (jax_steps.loss_scale), as in that example; else None


def _train_step(state: TrainState, images, labels, rows, learning_rate):
    """One SGD step on rows [batch] of the resident training set; returns (new state, loss before it)."""
    return _batch_step(state, images[rows], labels[rows], learning_rate)


def _batch_step(state: TrainState, x, y, learning_rate):
    """One SGD step on a batch x, labels y; returns (new state, loss before it)."""

    def loss_fn(params):
        logits, updates = state.apply_fn(
            {"params": params, "batch_stats": state.batch_stats}, x, train=True, mutable=["batch_stats"]
        )
        return state.loss_fn(logits, y), updates["batch_stats"]

    # fp16: the loss scaled, the gradients unscaled, and the update skipped where they overflowed.
    dynamic_scale, finite, (loss, batch_stats), grads = scaled_value_and_grad(
        loss_fn, state.dynamic_scale, state.params
    )
    hyperparams = {**state.opt_state.hyperparams, "learning_rate": learning_rate}
    state = state.replace(opt_state=state.opt_state._replace(hyperparams=hyperparams))
    new = state.apply_gradients(grads=grads, batch_stats=batch_stats, dynamic_scale=dynamic_scale)
    kept = keep_if_finite(finite, (new.params, new.opt_state), (state.params, state.opt_state))
    return new.replace(params=kept[0], opt_state=kept[1]), loss


def _predict_batch(apply_fn, params, batch_stats, images):
    """Logits of a batch of images in eval mode (BN running statistics)."""
    return apply_fn({"params": params, "batch_stats": batch_stats}, images, train=False)


class Implementation(FrameworkImplementation):
    task_id = "fmnist-resnet"
    implements = {"optimizer": "sgd", "loss": "softmax_cross_entropy"}
    # The Flax modules' dtype, param_dtype float32 (model.py); fp16 with Flax's DynamicScale (frameworks/jax/steps.py).
    precisions = ("fp32", "bf16", "fp16")
    multiprocess_devices = ("cpu", "cuda")
    # The step sees the global batch (one array over every process), so BatchNorm's statistics are global.
    batch_norm_spans = {"cpu": "global", "cuda": "global"}

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        fixed = recipe.fixed
        # Training and predict run in the same precision (what was trained is what is served).
        self.model = self._build_model(recipe)
        self.loss_fn = self._build_loss(recipe)
        self.nesterov = bool(fixed["nesterov"])
        self.tx = self._build_optimizer(recipe)
        compiled = mode == interface.COMPILED
        # donate the state: its buffers are reused for the next state instead of copied.
        self._step = jax.jit(_train_step, donate_argnums=0, **self.place.jit_options) if compiled else _train_step
        self._forward = jax.jit(_predict_batch, static_argnums=0) if compiled else _predict_batch  # apply_fn static

    def _build_model(self, recipe: interface.Recipe) -> nn.Module:
        """The network in the precision's compute dtype; image-resnet50-standard: its ResNet-50."""
        return ResNetSmall(dtype=COMPUTE_DTYPES[recipe.precision])

    def _build_loss(self, recipe: interface.Recipe) -> Callable[[jax.Array, jax.Array], jax.Array]:
        """`loss_fn(logits, labels)`, mean over the batch; image-resnet50-standard: with label smoothing."""
        return softmax_cross_entropy

    def _build_optimizer(self, recipe: interface.Recipe) -> optax.GradientTransformation:
        """torch's SGD (jax_optimizers.sgd_with_l2) under inject_hyperparams: the step writes each step's rate."""
        fixed = recipe.fixed
        return optax.inject_hyperparams(sgd_with_l2, static_args=("nesterov",))(
            learning_rate=recipe.learning_rate,
            momentum=fixed["momentum"],
            weight_decay=fixed["weight_decay"],
            nesterov=bool(fixed["nesterov"]),
        )

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.state = self._new_state(to_variables(weights, self._jax_device))

    def _new_state(self, variables: dict) -> TrainState:
        """A fresh TrainState (optimizer state from self.tx.init) of the Flax variables, batch_stats and fp16's
        loss scale beside the params, placed."""
        state = TrainState.create(
            apply_fn=self.model.apply,
            params=variables["params"],
            tx=self.tx,
            loss_fn=self.loss_fn,
            batch_stats=variables["batch_stats"],
            dynamic_scale=loss_scale(self.recipe.precision),  # fp16: from its start at every load
        )
        # On the device as arrays: TrainState.create leaves `step` a Python int, and the step after the
        # first would then see a new input type and compile again, inside the timed run.
        return self.place.replicate(state)

    def export(self) -> dict[str, np.ndarray]:
        return to_neutral(self.place.local({"params": self.state.params, "batch_stats": self.state.batch_stats}))

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 10] with the BN running statistics, for any N >= 1.

        Rows go through in chunks of at most 1024, each zero-padded to the next
        power of two (common/inputs.py predict_chunks), so jit compiles at most
        11 shapes; padded rows are sliced off.
        """
        images = inputs["images"]
        chunks = predict_chunks(len(images))
        # This process's copy: with N processes only rank 0 predicts, and must not wait for the others.
        params, batch_stats = self.place.local((self.state.params, self.state.batch_stats))
        outputs = []
        for start, stop, size in chunks:
            x = jax.device_put(pad_rows(images[start:stop], size)[..., None], self._jax_device)  # NHWC
            outputs.append(self._forward(self.model.apply, params, batch_stats, x))
        return host_rows(outputs, chunks)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        # Every process holds the whole training set; each step gathers its rows on the device.
        self.train_data = (  # (images, labels) on the device
            self.place.replicate(np.asarray(inputs["images"], np.float32)[..., None]),  # [N, 28, 28, 1]
            self.place.replicate(np.asarray(labels, np.int32)),  # [N]
        )

    def hyperparameters(self) -> dict:
        # The injected hyperparameters live in the optimizer state as float32 arrays; str() of a float32
        # is its shortest decimal, so 0.9 reads back as 0.9, not 0.8999999761581421.
        opt_state = self.state.opt_state if self.state is not None else self.tx.init({})
        hyper = {k: float(str(np.float32(v))) for k, v in jax.device_get(opt_state.hyperparams).items()}
        params = self.state.params if self.state is not None else {}
        return {
            **self.recipe.as_dict(),
            "optimizer": "sgd",  # sgd_with_l2 is optax.sgd after coupled decay
            "momentum": hyper["momentum"],
            "nesterov": self.nesterov,
            "weight_decay": hyper["weight_decay"],
            "loss": "softmax_cross_entropy",  # optax.softmax_cross_entropy_with_integer_labels, mean
            "precision": precision_in_use(self.model, params, getattr(self.state, "dynamic_scale", None)),
        }
