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
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.common.inputs import pad_rows, predict_chunks
from levelfield.reference.fmnist_resnet.jax.model import ResNetSmall
from levelfield.reference.fmnist_resnet.jax.weights import to_neutral, to_variables
from levelfield.reference.jax_optimizers import sgd_with_l2
from levelfield.reference.jax_steps import determinism_settings, host_rows, run_steps


class TrainState(train_state.TrainState):
    batch_stats: Any  # BN running mean / var, as in the Flax ImageNet example


class Implementation(interface.Implementation):
    task_id = "fmnist-resnet"
    framework = "jax"
    implements = {"optimizer": "sgd", "loss": "softmax_cross_entropy", "precision": "fp32"}

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        fixed = recipe.fixed
        # GPU path untested here (CPU-only machine): arrays are placed on jax.devices()[0].
        devices = {str(d): d for d in jax.devices()}
        self._jax_device = devices[device] if device else jax.devices()[0]
        self.device = str(self._jax_device)
        self.model = ResNetSmall()
        self.nesterov = bool(fixed["nesterov"])
        self.tx = optax.inject_hyperparams(sgd_with_l2, static_args=("nesterov",))(
            learning_rate=recipe.learning_rate,
            momentum=fixed["momentum"],
            weight_decay=fixed["weight_decay"],
            nesterov=self.nesterov,
        )
        compiled = mode == interface.COMPILED
        # donate the state: its buffers are reused for the next state instead of copied.
        self._step = jax.jit(self._train_step, donate_argnums=0) if compiled else self._train_step
        self._forward = jax.jit(self._predict_batch) if compiled else self._predict_batch
        self.state = None
        self.train_images = self.train_labels = None

    def version(self) -> str:
        return jax.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        variables = to_variables(weights, self._jax_device)
        state = TrainState.create(
            apply_fn=self.model.apply, params=variables["params"], tx=self.tx, batch_stats=variables["batch_stats"]
        )
        # On the device as arrays: TrainState.create leaves `step` a Python int, and the step after the
        # first would then see a new input type and compile again, inside the timed run.
        self.state = jax.device_put(state, self._jax_device)

    def export(self) -> dict[str, np.ndarray]:
        return to_neutral({"params": self.state.params, "batch_stats": self.state.batch_stats})

    def _predict_batch(self, params, batch_stats, images):
        return self.model.apply({"params": params, "batch_stats": batch_stats}, images, train=False)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 10] with the BN running statistics, for any N >= 1.

        Rows go through in chunks of at most 1024, each zero-padded to the next
        power of two (common/inputs.py predict_chunks), so jit compiles at most
        11 shapes; padded rows are sliced off.
        """
        images = inputs["images"]
        chunks = predict_chunks(len(images))
        outputs = []
        for start, stop, size in chunks:
            x = jax.device_put(pad_rows(images[start:stop], size)[..., None], self._jax_device)  # NHWC
            outputs.append(self._forward(self.state.params, self.state.batch_stats, x))
        return host_rows(outputs, chunks)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        self.train_images = jax.device_put(
            np.asarray(inputs["images"], np.float32)[..., None], self._jax_device
        )  # [N, 28, 28, 1]
        self.train_labels = jax.device_put(np.asarray(labels, np.int32), self._jax_device)  # [N]

    @staticmethod
    def _train_step(state: TrainState, images, labels, rows, learning_rate):
        """One SGD step on rows [batch] of the resident training set; returns (new state, loss before it)."""
        x, y = images[rows], labels[rows]

        def loss_fn(params):
            logits, updates = state.apply_fn(
                {"params": params, "batch_stats": state.batch_stats}, x, train=True, mutable=["batch_stats"]
            )
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return loss, updates["batch_stats"]

        (loss, batch_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        hyperparams = {**state.opt_state.hyperparams, "learning_rate": learning_rate}
        state = state.replace(opt_state=state.opt_state._replace(hyperparams=hyperparams))
        return state.apply_gradients(grads=grads, batch_stats=batch_stats), loss

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_images is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")

        def step(state, rows, lr):
            return self._step(state, self.train_images, self.train_labels, rows, lr)

        self.state, losses = run_steps(step, self.state, batch_indices, learning_rates, self._jax_device)
        return losses

    def hyperparameters(self) -> dict:
        # The injected hyperparameters live in the optimizer state as float32 arrays; str() of a float32
        # is its shortest decimal, so 0.9 reads back as 0.9, not 0.8999999761581421.
        opt_state = self.state.opt_state if self.state is not None else self.tx.init({})
        hyper = {k: float(str(np.float32(v))) for k, v in jax.device_get(opt_state.hyperparams).items()}
        dtypes = {p.dtype for p in jax.tree.leaves(self.state.params)} if self.state is not None else set()
        return {
            **self.recipe.as_dict(),
            "optimizer": "sgd",  # sgd_with_l2 is optax.sgd after coupled decay
            "momentum": hyper["momentum"],
            "nesterov": self.nesterov,
            "weight_decay": hyper["weight_decay"],
            "loss": "softmax_cross_entropy",  # optax.softmax_cross_entropy_with_integer_labels, mean
            "precision": "fp32" if dtypes <= {jnp.dtype("float32")} else ",".join(sorted(map(str, dtypes))),
        }
