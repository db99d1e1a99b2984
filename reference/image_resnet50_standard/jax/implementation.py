"""image-resnet50-standard in JAX: fmnist-resnet's implementation at ResNet-50's sizes, fed by a numpy prefetcher.

    impl = Implementation(Recipe.from_task(task))           # mode="eager": the same functions, not jitted
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))   # uint8 [N, 256, 256, 3]
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))     # uint8 centre crops -> float32 [N, 1000]

Everything is fmnist-resnet's (reference/fmnist_resnet/jax/implementation.py),
whose `__init__` this class inherits: the Flax model, optax SGD with coupled
L2 in a TrainState with batch_stats (`_new_state`), the step on one batch
(`_batch_step`, jax.jit'd with the state donated), the learning rate injected
per step, Flax's dtype policy and DynamicScale for bf16 / fp16, data parallel
over processes. What differs is in its hooks and the input side: the network
(`_build_model`: ResNet50 of a ResNetSpec), the loss (`_build_loss`:
optax.smooth_labels(one_hot, 0.1), then softmax cross-entropy: torch's
label_smoothing), the weights' layout (load, export), the step and predict
functions (`_train_step` takes the pipeline's batch, `_predict_batch`
normalises), and the input pipeline, whose state (workers, pipeline, step
counter) is all its `__init__` adds besides jitting those two functions.

The input pipeline runs inside train_steps, inside the timed run as in MLPerf:
the training set stays uint8 on the host, and each step's batch is cut (random
crop, flip, normalise) by reference/frameworks/jax/pipeline.py's worker threads while
XLA runs the previous steps, and handed to the shared step loop
(jax_steps.run_steps); the crops and flips are common/augment.py's decisions
for (step, row), step counted from the last load(). predict normalises the
uint8 centre crops inside its jitted function.

Several processes (`levelfield train --nproc N`): each rank runs its own
input pipeline, on its own share of the host's CPUs, over the rows
`train_steps` hands it, its contiguous share of every global batch (rank r:
rows r*B/N to (r+1)*B/N - 1 of the one data order). Crops and flips are
decided per (step, row), so the N shares together are exactly the batch one
process would build, and the global batch stays the rules' B. Batch norm is
fmnist-resnet's: global (the step sees the global batch as one sharded array).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.jax.implementation import Implementation as SmallImplementation
from levelfield.reference.fmnist_resnet.jax.implementation import TrainState, _batch_step
from levelfield.reference.fmnist_resnet.jax.weights import to_neutral, to_variables
from levelfield.reference.frameworks.jax.pipeline import Pipeline
from levelfield.reference.frameworks.jax.steps import COMPUTE_DTYPES, host_rows, run_steps
from levelfield.reference.image_resnet50_standard.common.augment import INV_STD, MEAN, input_workers, step_plans
from levelfield.reference.image_resnet50_standard.common.inputs import pad_rows, predict_chunks
from levelfield.reference.image_resnet50_standard.common.model_spec import IMPLEMENTS, SPEC, ResNetSpec
from levelfield.reference.image_resnet50_standard.jax.model import ResNet50


def smoothed_cross_entropy(logits: jax.Array, labels: jax.Array, label_smoothing: float) -> jax.Array:
    """Mean over the batch of softmax cross-entropy of logits [B, classes] against int labels [B] as one-hot
    targets smoothed to (1 - label_smoothing) + label_smoothing / classes: torch's label_smoothing."""
    targets = optax.smooth_labels(jax.nn.one_hot(labels, logits.shape[-1]), label_smoothing)
    return optax.softmax_cross_entropy(logits, targets).mean()


def _train_step(state: TrainState, x, y, learning_rate):
    """One SGD step on an augmented batch x [B, 224, 224, 3], labels y [B] as the input pipeline cut it (no rows
    to gather): fmnist-resnet's step on one batch. Returns (new state, loss before it)."""
    return _batch_step(state, x, y, learning_rate)


def _predict_batch(apply_fn, params, batch_stats, pixels):
    """Logits of a batch of uint8 NHWC centre crops, normalised here, in eval mode (BN running statistics)."""
    x = (pixels.astype(jnp.float32) - MEAN) * INV_STD  # uint8 NHWC -> normalised float32
    return apply_fn({"params": params, "batch_stats": batch_stats}, x, train=False)


class Implementation(SmallImplementation):
    task_id = "image-resnet50-standard"
    implements = IMPLEMENTS
    spec: ResNetSpec = SPEC  # the sizes (the equivalence tests set a reduced spec on a subclass)

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        compiled = mode == interface.COMPILED
        # This module's step and predict in place of fmnist-resnet's: the state donated, apply_fn static.
        self._step = jax.jit(_train_step, donate_argnums=0, **self.place.jit_options) if compiled else _train_step
        self._forward = jax.jit(_predict_batch, static_argnums=0) if compiled else _predict_batch
        self.input_workers = input_workers()  # the trainer logs it (levelfield_input_workers)
        self.pipeline = None
        self.step = 0  # optimizer steps since load(): the augmentation's counter (common/augment.py)

    def _build_model(self, recipe: interface.Recipe) -> nn.Module:
        return ResNet50(self.spec, dtype=COMPUTE_DTYPES[recipe.precision])

    def _build_loss(self, recipe: interface.Recipe) -> Callable[[jax.Array, jax.Array], jax.Array]:
        return functools.partial(smoothed_cross_entropy, label_smoothing=float(recipe.fixed["label_smoothing"]))

    def load(self, weights: dict[str, np.ndarray]) -> None:
        # fmnist-resnet's mapping, with this network's names
        self.state = self._new_state(to_variables(weights, self._jax_device, self.spec.parameter_shapes, self.task_id))
        self.step = 0

    def export(self) -> dict[str, np.ndarray]:
        variables = self.place.local({"params": self.state.params, "batch_stats": self.state.batch_stats})
        return to_neutral(variables, self.spec.parameter_shapes)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 1000] of uint8 centre crops, BN running statistics; chunks of at most 64 rows,
        each zero-padded to a power of two (common/inputs.py)."""
        images = inputs["images"]
        chunks = predict_chunks(len(images))
        params, batch_stats = self.place.local((self.state.params, self.state.batch_stats))
        outputs = []
        for start, stop, size in chunks:
            x = jax.device_put(pad_rows(images[start:stop], size), self._jax_device)
            outputs.append(self._forward(self.model.apply, params, batch_stats, x))
        return host_rows(outputs, chunks)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        if self.pipeline is not None:
            self.pipeline.close()
        self.train_data = (inputs["images"], labels)  # uint8 [N, 256, 256, 3] on the host; the pipeline crops it
        self.pipeline = Pipeline(inputs["images"], labels, self.spec.image_size, self.input_workers)

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        plans = step_plans(self.step, batch_indices, self.train_data[0].shape[1], self.spec.image_size)
        # The step takes each batch as the pipeline cuts it: (state, x, y, lr), no training arrays to gather from.
        batches = self.pipeline.batches(batch_indices, plans)
        self.state, losses = run_steps(self._step, self.state, (), batch_indices, learning_rates, self.place, batches)
        self.step += len(batch_indices)
        return losses

    def hyperparameters(self) -> dict:
        return {**super().hyperparameters(), "label_smoothing": self.loss_fn.keywords["label_smoothing"]}
