"""ctr-dlrm in JAX: a Flax linen module, Optax Adam, one jax.jit'd train step per batch.

    impl = Implementation(Recipe.from_task(task))          # mode="compiled" (default) or "eager"
    impl.load(init_weights(seed))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_order(...), learning_rates(...))
    logits = impl.predict(model_inputs(arrays, "eval"))    # float32 [N]

As the Flax examples: a `TrainState` holds params, the Optax state, the
model's apply_fn and the loss (reference/frameworks/jax/steps.py); the module-level
`_train_step` gathers the batch by row indices from the device-resident
training arrays, takes `jax.value_and_grad` of the loss and applies the
update. The learning rate is `optax.inject_hyperparams` state, written by the
step from its argument, so a new LR every step reuses the same compiled step.
Eager mode calls the same functions without jax.jit (op-by-op dispatch).

With N processes (`levelfield train --nproc N`) the same step runs on global
arrays (reference/frameworks/jax/parallel.py): state and training set replicated, the
batch split over the processes' devices, and XLA all-reduces the gradient;
predict uses this process's copy of the parameters (only rank 0 predicts).

ctr-dlrm-standard subclasses this class with its own `spec` and the optimizer
its `_build_optimizer` hook builds (docs/architecture.md, "Interfaces").
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
import optax
from flax import linen as nn

from levelfield.reference.ctr_dlrm.common import model_spec
from levelfield.reference.ctr_dlrm.common.inputs import check_inputs, pad_rows, predict_chunks
from levelfield.reference.ctr_dlrm.jax.model import DLRMSmall
from levelfield.reference.ctr_dlrm.jax.weights import to_neutral, to_params
from levelfield.reference.frameworks.jax.optimizers import adam
from levelfield.reference.frameworks.jax.parallel import local_device, placement
from levelfield.reference.frameworks.jax.steps import (
    COMPUTE_DTYPES,
    TrainState,
    determinism_settings,
    host_rows,
    precision_in_use,
    run_steps,
)
from levelfield.reference.interface import COMPILED, Recipe
from levelfield.reference.interface import Implementation as BaseImplementation


def sigmoid_binary_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean over the batch of sigmoid binary cross-entropy of logits [B] against float labels [B]."""
    return optax.sigmoid_binary_cross_entropy(logits, labels).mean()


def _train_step(state: TrainState, dense, sparse, labels, rows, lr):
    """One Adam step on the batch `rows` (int32 [B]) of the training arrays; returns (state, loss)."""
    return _batch_step(state, dense[rows], sparse[rows], labels[rows], lr)


def _batch_step(state: TrainState, dense, sparse, labels, lr):
    """One Adam step on a batch (dense [B, 13], sparse [B, fields], labels [B]); returns (state, loss)."""

    def loss_fn(params):
        logits = state.apply_fn({"params": params}, dense, sparse)
        return state.loss_fn(logits, labels)

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    # This step's LR, an input of the compiled step rather than a constant baked into it.
    opt_state = state.opt_state._replace(hyperparams={**state.opt_state.hyperparams, "learning_rate": lr})
    return state.replace(opt_state=opt_state).apply_gradients(grads=grads), loss


def _predict_batch(apply_fn, params, dense, sparse):
    """Logits [b] of a batch."""
    return apply_fn({"params": params}, dense, sparse)


class Implementation(BaseImplementation):
    task_id = "ctr-dlrm"
    framework = "jax"
    implements = {"optimizer": "adam", "loss": "sigmoid_binary_cross_entropy"}  # precisions: fp32 only (the default)
    multiprocess_devices = ("cpu", "cuda")
    spec: model_spec.DLRMSpec = model_spec.SPEC  # the network's shapes (ctr-dlrm-standard: its own spec)

    def __init__(self, recipe: Recipe, *, mode: str = COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        # --device (cpu, cuda, cuda:N), else this process's first device: its GPU where it has one (run on
        # an H200: docs/scale.md, GPU paths).
        self._jax_device = local_device(device)
        self.device = str(self._jax_device)
        self.place = placement(self._jax_device)  # one device, or data-parallel over N processes
        self.model = self._build_model(recipe)
        if recipe.fixed["weight_decay"]:  # torch's weight decay is a coupled L2 term; optax.adamw's is not
            raise ValueError(f"weight_decay {recipe.fixed['weight_decay']} is not supported (the rules fix 0)")
        self.loss_fn = self._build_loss(recipe)
        self.tx = self._build_optimizer(recipe)
        compiled = mode == COMPILED
        # donate the state: its buffers are reused for the next state instead of copied.
        self._step = jax.jit(_train_step, donate_argnums=0, **self.place.jit_options) if compiled else _train_step
        self._forward = jax.jit(_predict_batch, static_argnums=0) if compiled else _predict_batch  # apply_fn static
        self.state = None
        self.train_data = None  # (dense, sparse, labels) on the device, from set_train_data

    def _build_model(self, recipe: Recipe) -> nn.Module:
        """The network at this task's spec and the precision's compute dtype (bf16: bfloat16)."""
        return DLRMSmall(self.spec, COMPUTE_DTYPES[recipe.precision])

    def _build_loss(self, recipe: Recipe) -> Callable[[jax.Array, jax.Array], jax.Array]:
        """`loss_fn(logits, labels)`: mean sigmoid binary cross-entropy."""
        return sigmoid_binary_cross_entropy

    def _build_optimizer(self, recipe: Recipe) -> optax.GradientTransformation:
        """torch's Adam (jax_optimizers.adam) under inject_hyperparams; ctr-dlrm-standard: plain SGD."""
        fixed = recipe.fixed
        return adam(recipe.learning_rate, fixed["beta1"], fixed["beta2"], fixed["epsilon"])

    def version(self) -> str:
        return jax.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self._jax_device)

    # -- weights ------------------------------------------------------------------
    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.state = self._new_state({"params": to_params(weights, shapes=self.spec)})

    def _new_state(self, variables: dict) -> TrainState:
        """A fresh TrainState (optimizer state from self.tx.init) of the Flax variables, placed."""
        state = TrainState.create(
            apply_fn=self.model.apply, params=variables["params"], tx=self.tx, loss_fn=self.loss_fn
        )
        # Commit every leaf (the Python-int step, the optimizer's fresh zeros) to the device, as the
        # step's outputs are: otherwise the second step sees different argument types and recompiles.
        return self.place.replicate(state)

    def export(self) -> dict[str, np.ndarray]:
        return to_neutral(self.place.local(self.state.params), self.spec)

    # -- inference ----------------------------------------------------------------
    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N] for any N >= 1.

        Compiled mode cuts the request into chunks of at most MAX_PREDICT_BATCH
        rows and pads each to the next power of two (then slices), so jit
        compiles a handful of shapes only. Eager mode runs the exact shape.
        """
        n = check_inputs(inputs)
        # This process's copy: with N processes only rank 0 predicts, and must not wait for the others.
        params = self.place.local(self.state.params)
        outputs = []
        for start, stop, size in predict_chunks(n):
            if self.mode != COMPILED:
                size = stop - start
            dense = jax.device_put(pad_rows(inputs["dense"][start:stop], size), self._jax_device)
            sparse = jax.device_put(pad_rows(inputs["sparse"][start:stop], size), self._jax_device)
            outputs.append(self._forward(self.model.apply, params, dense, sparse))
        return host_rows(outputs, predict_chunks(n))

    # -- training -----------------------------------------------------------------
    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        check_inputs(inputs)
        # Every process holds the whole training set; each step gathers its rows on the device.
        self.train_data = tuple(
            self.place.replicate(np.asarray(a, dtype))
            for a, dtype in ((inputs["dense"], np.float32), (inputs["sparse"], np.int32), (labels, np.float32))
        )

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        self.state, losses = run_steps(
            self._step, self.state, self.train_data, batch_indices, learning_rates, self.place
        )
        return losses

    def optimizer_hyperparameters(self, hp: dict[str, float]) -> dict:
        """The optimizer's name and settings by rules name, from its injected hyperparameters `hp`."""
        return {"optimizer": "adam", "beta1": hp["b1"], "beta2": hp["b2"], "epsilon": hp["eps"]}

    def hyperparameters(self) -> dict:
        # inject_hyperparams keeps the configured values in the optimizer state (as float32 arrays).
        opt_state = self.state.opt_state if self.state is not None else self.tx.init({})
        hp = {name: float(value) for name, value in opt_state.hyperparams.items()}
        params = self.state.params if self.state is not None else {}
        return {
            **self.recipe.as_dict(),
            **self.optimizer_hyperparameters(hp),
            "weight_decay": 0.0,  # neither optax.adam nor optax.sgd has any (checked in __init__)
            "loss": "sigmoid_binary_cross_entropy",  # optax.sigmoid_binary_cross_entropy(...).mean()
            "precision": precision_in_use(self.model, params, None),
        }
