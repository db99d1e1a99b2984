"""seq-transformer in JAX: Flax linen model + optax.adamw in a TrainState, train step under jax.jit.

    from levelfield.reference.seq_transformer.jax.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": the same functions, not jitted
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 12, 10]

As in the Flax examples: a TrainState (params, optimizer state, apply_fn, tx
and the loss, reference/frameworks/jax/steps.py) is threaded through a jitted
module-level `_train_step`; the training set lives in device arrays and the
step gathers its batch by index on the device. optax.adamw is
torch.optim.AdamW (update -lr * (m_hat / (sqrt(v_hat) + eps) + wd * p));
`optax.inject_hyperparams` keeps the learning rate in the optimizer state,
where the step writes each step's rate from an argument, so it never
recompiles. The step and predict functions are module-level, and the hooks
return the same objects in every instance (one Flax module per spec, the
optimizer once per configuration, a module-level loss), so every
Implementation in a process (e.g. the 5 runs of a task) shares one compiled
program per shape.

With N processes (`levelfield train --nproc N`) the same step runs on global
arrays (reference/frameworks/jax/parallel.py): state and training set replicated, the
batch split over the processes' devices, and XLA all-reduces the gradient;
predict uses this process's copy of the parameters (only rank 0 predicts).

seq-transformer-standard subclasses this class with its own `spec` and predict
answering token ids (`predict_argmax`), through the hooks every
implementation has (docs/architecture.md, "Interfaces").
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
from levelfield.reference.frameworks.jax.optimizers import adamw
from levelfield.reference.frameworks.jax.parallel import local_device, placement
from levelfield.reference.frameworks.jax.steps import (
    COMPUTE_DTYPES,
    TrainState,
    determinism_settings,
    host_rows,
    precision_in_use,
    run_steps,
    softmax_cross_entropy,
)
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.inputs import MAX_PREDICT_BATCH, pad_rows, predict_chunks
from levelfield.reference.seq_transformer.jax.model import EncoderSmall
from levelfield.reference.seq_transformer.jax.weights import from_params, to_params

# One Flax module per spec in the process: the TrainState's apply_fn and predict's static apply_fn are then
# the same object in every Implementation of that spec, and so are their compiled programs (jit's cache).
_encoder = functools.cache(EncoderSmall)


def _train_step(state: TrainState, tokens, labels, rows, lr):
    """One AdamW step on rows [B] of tokens / labels [N, 12]; returns (new state, loss before the step)."""
    return _batch_step(state, tokens[rows], labels[rows], lr)  # [B, 12] each


def _batch_step(state: TrainState, x, y, lr):
    """One AdamW step on a batch x [B, 12] with labels y [B, 12]; returns (new state, loss before the step)."""

    def loss_fn(params):
        logits = state.apply_fn({"params": params}, x)  # [B, 12, 10]
        return state.loss_fn(logits, y)  # mean over B*12

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    state.opt_state.hyperparams["learning_rate"] = lr
    return state.apply_gradients(grads=grads), loss


def _predict_batch(apply_fn, params, tokens, argmax: bool):
    """Logits [b, seq_len, classes] of tokens [b, seq_len], or their argmax token ids int32 [b, seq_len]."""
    logits = apply_fn({"params": params}, tokens)
    return jnp.argmax(logits, axis=-1).astype(jnp.int32) if argmax else logits


class Implementation(interface.Implementation):
    task_id = "seq-transformer"
    framework = "jax"
    implements = {"optimizer": "adamw", "loss": "softmax_cross_entropy"}  # precisions: fp32 only (the default)
    multiprocess_devices = ("cpu", "cuda")
    spec: model_spec.TransformerSpec = model_spec.SPEC  # the sizes (seq-transformer-standard: its own)
    # seq-transformer-standard sets these: a smaller predict chunk, and predict answering the argmax token
    # ids int32 [N, seq_len] instead of logits, which at BERT's vocabulary would be 15 MiB per row.
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = False

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        # --device (cpu, cuda, cuda:N), else this process's first device: its GPU where it has one (run on
        # an H200: docs/scale.md, GPU paths).
        self._jax_device = local_device(device)
        self.device = str(self._jax_device)
        self.place = placement(self._jax_device)  # one device, or data-parallel over N processes
        self.model = self._build_model(recipe)
        self.loss_fn = self._build_loss(recipe)
        self.tx = self._build_optimizer(recipe)
        compiled = mode == interface.COMPILED
        # donate the state: its buffers are reused for the next state instead of copied.
        self._step = jax.jit(_train_step, donate_argnums=0, **self.place.jit_options) if compiled else _train_step
        # Each padded predict size (at most 11, see predict_chunks) is one XLA program; apply_fn, argmax static.
        self._forward = jax.jit(_predict_batch, static_argnums=(0, 3)) if compiled else _predict_batch
        self.state = None
        self.train_data = None  # (tokens, labels) on the device, from set_train_data

    def _build_model(self, recipe: interface.Recipe) -> nn.Module:
        """The network at this task's spec and the precision's compute dtype (bf16: bfloat16): the one module of
        that spec and dtype in this process (`_encoder`)."""
        return _encoder(self.spec, COMPUTE_DTYPES[recipe.precision])

    def _build_loss(self, recipe: interface.Recipe) -> Callable[[jax.Array, jax.Array], jax.Array]:
        """`loss_fn(logits, labels)`: mean softmax cross-entropy over all B*12 positions."""
        return softmax_cross_entropy

    def _build_optimizer(self, recipe: interface.Recipe) -> optax.GradientTransformation:
        """optax.adamw under inject_hyperparams (jax_optimizers.adamw), the same object for the same values."""
        fixed = recipe.fixed
        return adamw(
            float(recipe.learning_rate),
            float(fixed["beta1"]),
            float(fixed["beta2"]),
            float(fixed["epsilon"]),
            float(fixed["weight_decay"]),
        )

    def version(self) -> str:
        return jax.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self._jax_device)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.state = self._new_state({"params": to_params(weights, self._jax_device, self.spec)})

    def _new_state(self, variables: dict) -> TrainState:
        """A fresh TrainState (optimizer state from self.tx.init) of the Flax variables, placed."""
        state = TrainState.create(
            apply_fn=self.model.apply, params=variables["params"], tx=self.tx, loss_fn=self.loss_fn
        )
        # On the device as arrays: TrainState.create leaves `step` a Python int, and the step after the
        # first would then see a new input type and compile again, inside the timed run.
        return self.place.replicate(state)

    def export(self) -> dict[str, np.ndarray]:
        return from_params(self.place.local(self.state.params), self.spec)

    @property
    def params(self) -> dict:
        return self.state.params

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 12, 10] for any N >= 1.

        Rows go through in chunks of at most 1024, each padded with token-0
        rows to the next power of two (common/inputs.py predict_chunks), so the
        jitted function sees at most 11 input shapes; padded rows are sliced off.
        """
        tokens = np.asarray(inputs["tokens"], np.int32)
        chunks = predict_chunks(len(tokens), self.max_predict_batch)
        # This process's copy: with N processes only rank 0 predicts, and must not wait for the others.
        params = self.place.local(self.state.params)
        outputs = [
            self._forward(
                self.model.apply,
                params,
                jax.device_put(pad_rows(tokens[start:stop], size), self._jax_device),
                self.predict_argmax,
            )
            for start, stop, size in chunks
        ]
        rows = host_rows(outputs, chunks)  # float32: token ids < 2^24 are exact
        return rows.astype(np.int32) if self.predict_argmax else rows

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        # Every process holds the whole training set; each step gathers its rows on the device.
        self.train_data = (
            self.place.replicate(np.asarray(inputs["tokens"], np.int32)),  # [N, 12]
            self.place.replicate(np.asarray(labels, np.int32)),  # [N, 12]
        )

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        self.state, losses = run_steps(
            self._step, self.state, self.train_data, batch_indices, learning_rates, self.place
        )
        return losses

    def hyperparameters(self) -> dict:
        # inject_hyperparams keeps these as float32 arrays; 7 significant digits (float32's precision)
        # read back exactly the decimal values configured.
        hp = {name: float(f"{float(value):.7g}") for name, value in self.state.opt_state.hyperparams.items()}
        return {
            **self.recipe.as_dict(),
            "optimizer": "adamw",  # jax_optimizers.adamw: optax.adamw under inject_hyperparams
            "beta1": hp["b1"],
            "beta2": hp["b2"],
            "epsilon": hp["eps"],
            "weight_decay": hp["weight_decay"],
            "loss": "softmax_cross_entropy" if self.loss_fn is softmax_cross_entropy else repr(self.loss_fn),
            "precision": precision_in_use(self.model, self.state.params, None),
        }
