"""seq-transformer in JAX: Flax linen model + optax.adamw in a TrainState, train step under jax.jit.

    from levelfield.reference.seq_transformer.jax.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": the same functions, not jitted
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 12, 10]

As in the Flax examples: a TrainState (params, optimizer state, apply_fn and
tx) is threaded through a jitted `_train_step`; the training set lives in
device arrays and the step gathers its batch by index on the device.
optax.adamw is torch.optim.AdamW (update -lr * (m_hat / (sqrt(v_hat) + eps)
+ wd * p)); `optax.inject_hyperparams` keeps the learning rate in the
optimizer state, where the step writes each step's rate from an argument, so
it never recompiles. The step and predict functions are module-level and the
optimizer is built once per configuration, so every Implementation in a
process (e.g. the 5 runs of a task) shares one compiled program per shape.

With N processes (`levelfield train --nproc N`) the same step runs on global
arrays (reference/jax_parallel.py): state and training set replicated, the
batch split over the processes' devices, and XLA all-reduces the gradient;
predict uses this process's copy of the parameters (only rank 0 predicts).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training.train_state import TrainState

from levelfield.reference import interface
from levelfield.reference.jax_optimizers import adamw
from levelfield.reference.jax_parallel import local_device, placement
from levelfield.reference.jax_steps import determinism_settings, host_rows, run_steps
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.inputs import MAX_PREDICT_BATCH, pad_rows, predict_chunks
from levelfield.reference.seq_transformer.jax.model import EncoderSmall
from levelfield.reference.seq_transformer.jax.weights import from_params, to_params

MODEL = EncoderSmall()  # stateless module definition; one object so compiled steps are shared
OPTIMIZER = optax.adamw  # what jax_optimizers.adamw injects; its __name__ is the rules' optimizer name
# Rules loss name of the loss function _train_step uses.
LOSS = optax.softmax_cross_entropy_with_integer_labels
LOSS_NAMES = {optax.softmax_cross_entropy_with_integer_labels: "softmax_cross_entropy"}


def _train_step(state: TrainState, tokens, labels, rows, lr):
    """One AdamW step on rows [B] of tokens / labels [N, 12]; returns (new state, loss before the step)."""
    x, y = tokens[rows], labels[rows]  # [B, 12]

    def loss_fn(params):
        logits = state.apply_fn({"params": params}, x)  # [B, 12, 10]
        return LOSS(logits, y).mean()  # mean over B*12

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    state.opt_state.hyperparams["learning_rate"] = lr
    return state.apply_gradients(grads=grads), loss


def _predict_batch(params, tokens):
    return MODEL.apply({"params": params}, tokens)  # [b, 12] -> [b, 12, 10]


# donate the state: its buffers are reused for the next state instead of copied.
_train_step_jit = jax.jit(_train_step, donate_argnums=0)
# Each padded predict size (at most 11, see predict_chunks) is one XLA program.
_predict_batch_jit = jax.jit(_predict_batch)


@functools.cache
def _model_for(shapes: model_spec.TransformerSpec, argmax: bool) -> tuple[EncoderSmall, object, object]:
    """(module, predict function, its jit) for a spec: encoder-small's module-level ones, or one set per
    other spec (seq-transformer-standard), built once per process so its runs share compiled programs."""
    if shapes == model_spec.SPEC and not argmax:
        return MODEL, _predict_batch, _predict_batch_jit
    model = EncoderSmall(shapes)

    def predict_batch(params, tokens):
        logits = model.apply({"params": params}, tokens)  # [b, seq_len] -> [b, seq_len, classes]
        return jnp.argmax(logits, axis=-1).astype(jnp.int32) if argmax else logits

    return model, predict_batch, jax.jit(predict_batch)


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
        fixed = recipe.fixed
        # --device (cpu, cuda, cuda:N), else this process's first device: its GPU where it has one (run on
        # an H200: docs/scale.md, GPU paths).
        self._jax_device = local_device(device)
        self.device = str(self._jax_device)
        self.place = placement(self._jax_device)  # one device, or data-parallel over N processes
        self.model, predict_batch, predict_batch_jit = _model_for(self.spec, self.predict_argmax)
        self.tx = adamw(
            float(recipe.learning_rate),
            float(fixed["beta1"]),
            float(fixed["beta2"]),
            float(fixed["epsilon"]),
            float(fixed["weight_decay"]),
        )
        compiled = mode == interface.COMPILED
        self._step = _train_step_jit if compiled else _train_step
        if compiled and self.place.jit_options:  # N processes: the step's outputs stay replicated
            self._step = jax.jit(_train_step, donate_argnums=0, **self.place.jit_options)
        self._forward = predict_batch_jit if compiled else predict_batch
        self.state = None
        self.train_tokens = self.train_labels = None

    def version(self) -> str:
        return jax.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self._jax_device)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        state = TrainState.create(
            apply_fn=self.model.apply, params=to_params(weights, self._jax_device, self.spec), tx=self.tx
        )
        # On the device as arrays: TrainState.create leaves `step` a Python int, and the step after the
        # first would then see a new input type and compile again, inside the timed run.
        self.state = self.place.replicate(state)

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
            self._forward(params, jax.device_put(pad_rows(tokens[start:stop], size), self._jax_device))
            for start, stop, size in chunks
        ]
        rows = host_rows(outputs, chunks)  # float32: token ids < 2^24 are exact
        return rows.astype(np.int32) if self.predict_argmax else rows

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        # Every process holds the whole training set; each step gathers its rows on the device.
        self.train_tokens = self.place.replicate(np.asarray(inputs["tokens"], np.int32))  # [N, 12]
        self.train_labels = self.place.replicate(np.asarray(labels, np.int32))  # [N, 12]

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_tokens is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")

        def step(state, rows, lr):
            return self._step(state, self.train_tokens, self.train_labels, rows, lr)

        self.state, losses = run_steps(step, self.state, batch_indices, learning_rates, self.place)
        return losses

    def hyperparameters(self) -> dict:
        # inject_hyperparams keeps these as float32 arrays; 7 significant digits (float32's precision)
        # read back exactly the decimal values configured.
        hp = {name: float(f"{float(value):.7g}") for name, value in self.state.opt_state.hyperparams.items()}
        dtypes = {leaf.dtype for leaf in jax.tree_util.tree_leaves(self.state.params)}
        return {
            **self.recipe.as_dict(),
            "optimizer": OPTIMIZER.__name__,
            "beta1": hp["b1"],
            "beta2": hp["b2"],
            "epsilon": hp["eps"],
            "weight_decay": hp["weight_decay"],
            "loss": LOSS_NAMES.get(LOSS, repr(LOSS)),
            "precision": "fp32" if dtypes == {jnp.dtype("float32")} else ",".join(sorted(map(str, dtypes))),
        }
