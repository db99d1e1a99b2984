"""ctr-dlrm in TensorFlow: a Keras 3 model, a GradientTape train step under tf.function(jit_compile=True).

    impl = Implementation(Recipe.from_task(task))          # mode="compiled" (default) or "eager"
    impl.load(init_weights(seed))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_order(...), learning_rates(...))
    logits = impl.predict(model_inputs(arrays, "eval"))    # float32 [N]

The whole training set stays on the device as TF tensors (dense, sparse,
labels). `train_steps` hands the trainer's row indices and learning rates to
reference/frameworks/tensorflow/steps.py's `run_steps`, which makes them tensors once per call on
the host and calls the XLA-compiled step once per batch; the step gathers the
batch from the training tensors on the device, so only row indices and rates
cross from the host. The step's signature never changes (the data tensors,
int64 [B] rows, a float32 scalar LR), so it is traced once per batch size; the
per-step LR goes into the optimizer's learning-rate variable inside the step.

Under `levelfield train --nproc N` (reference/frameworks/tensorflow/parallel.py) the model and
optimizer are mirrored by MultiWorkerMirroredStrategy and the optimizer sums
the ranks' gradients of loss / N (reference/frameworks/tensorflow/steps.py `train_step`), their mean; the
embeddings' gradients are made dense before that all-reduce (reference/frameworks/tensorflow/steps.py).

ctr-dlrm-standard subclasses this class with its own `spec` and the optimizer
its `_build_optimizer` hook builds (docs/architecture.md, "Interfaces").
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from levelfield.reference.ctr_dlrm.common import model_spec
from levelfield.reference.ctr_dlrm.common.inputs import check_inputs, pad_rows, predict_chunks
from levelfield.reference.ctr_dlrm.tensorflow.model import build_model
from levelfield.reference.ctr_dlrm.tensorflow.weights import export_neutral, load_neutral
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.frameworks.tensorflow.optimizers import TorchAdam
from levelfield.reference.frameworks.tensorflow.parallel import scale_loss_for_distribution, strategy_scope, tf_device
from levelfield.reference.frameworks.tensorflow.steps import (
    DTYPE_POLICIES,
    determinism_settings,
    precision_in_use,
    run_steps,
    train_step,
)
from levelfield.reference.interface import COMPILED, Recipe
from levelfield.reference.interface import Implementation as BaseImplementation


class Implementation(BaseImplementation):
    task_id = "ctr-dlrm"
    framework = "tensorflow"
    implements = {"optimizer": "adam", "loss": "sigmoid_binary_cross_entropy"}  # precisions: fp32 only (the default)
    multiprocess_devices = ("cpu", "cuda")
    spec: model_spec.DLRMSpec = model_spec.SPEC  # the network's shapes (ctr-dlrm-standard: its own spec)

    def __init__(self, recipe: Recipe, *, mode: str = COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        # --device (cpu, cuda, cuda:N), else the first GPU, else the CPU (not yet run on a GPU: docs/scale.md).
        self.device = tf_device(device)
        if recipe.fixed["weight_decay"]:  # torch's weight decay is a coupled L2 term; Keras' is decoupled
            raise ValueError(f"weight_decay {recipe.fixed['weight_decay']} is not supported (the rules fix 0)")
        with tf.device(self.device), strategy_scope():  # mirrored under --nproc N
            self.model = self._build_model(recipe)
            self.optimizer = self._build_optimizer(recipe)
            self.optimizer.build(self.model.trainable_variables)
        self.loss_fn = self._build_loss(recipe)
        # (dense, sparse, labels, rows, lr) -> loss
        self._step = train_step(self._gradients, self._apply, mode == COMPILED)
        self._forward = tf.function(self._predict_batch, jit_compile=True) if mode == COMPILED else self._predict_batch
        self.train_data = None  # (dense, sparse, labels) tensors on self.device, from set_train_data

    def _build_model(self, recipe: Recipe) -> keras.Model:
        """The network at this task's spec under the precision's dtype policy (bf16: mixed_bfloat16), variables
        created (in __init__'s device and strategy scope)."""
        return build_model(self.spec, DTYPE_POLICIES[recipe.precision])

    def _build_loss(self, recipe: Recipe) -> keras.losses.Loss:
        """Mean sigmoid BCE on logits (tf.nn.sigmoid_cross_entropy_with_logits, the stable form)."""
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def _build_optimizer(self, recipe: Recipe) -> keras.optimizers.Optimizer:
        """torch's Adam (TorchAdam), built by __init__ in the device and strategy scope; ctr-dlrm-standard: SGD."""
        fixed = recipe.fixed
        return TorchAdam(
            learning_rate=recipe.learning_rate, beta_1=fixed["beta1"], beta_2=fixed["beta2"], epsilon=fixed["epsilon"]
        )

    def version(self) -> str:
        return tf.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device)

    # -- weights ------------------------------------------------------------------
    def _new_optimizer(self) -> None:
        """Fresh optimizer state: step count, moments and LR zeroed (the same variables: no retrace of the step)."""
        for variable in self.optimizer.variables:
            variable.assign(tf.zeros_like(variable))

    def load(self, weights: dict[str, np.ndarray]) -> None:
        load_neutral(self.model, weights)
        self._new_optimizer()

    def export(self) -> dict[str, np.ndarray]:
        return export_neutral(self.model)

    # -- inference ----------------------------------------------------------------
    def _predict_batch(self, dense, sparse):
        return self.model({"dense": dense, "sparse": sparse}, training=False)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N] for any N >= 1.

        Compiled mode cuts the request into chunks of at most MAX_PREDICT_BATCH
        rows and pads each to the next power of two (then slices), so the
        XLA-compiled forward is traced for a handful of shapes only. Eager mode
        runs the exact shape.
        """
        n = check_inputs(inputs)
        outputs = []
        with tf.device(self.device):
            for start, stop, size in predict_chunks(n):
                if self.mode != COMPILED:
                    size = stop - start
                logits = self._forward(
                    tf.constant(pad_rows(inputs["dense"][start:stop], size)),
                    tf.constant(pad_rows(inputs["sparse"][start:stop], size)),
                )
                outputs.append(logits.numpy()[: stop - start])
        return np.concatenate(outputs).astype(np.float32)

    # -- training -----------------------------------------------------------------
    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        check_inputs(inputs)
        with tf.device(self.device):
            self.train_data = (
                tf.constant(inputs["dense"], tf.float32),
                tf.constant(inputs["sparse"], tf.int32),
                tf.constant(np.asarray(labels, np.float32)),
            )

    def _gradients(self, dense, sparse, labels, rows):
        """The loss on the batch `rows` (int64 [B]) and its gradients."""
        batch = {"dense": tf.gather(dense, rows), "sparse": tf.gather(sparse, rows)}
        return self._batch_gradients(batch, tf.gather(labels, rows))

    def _batch_gradients(self, x, targets):
        """The loss of the model on a batch x ({"dense", "sparse"}) against `targets` [B] and its gradients."""
        with tf.GradientTape() as tape:
            loss = self.loss_fn(targets, self.model(x, training=True))
            # Under --nproc N a Keras loss is divided by N, so that the optimizer's all-reduced SUM of the
            # ranks' gradients is their mean; Keras skips that for a loss already reduced to a scalar, as
            # BCE over [B] logits is (its mean over the last axis is the batch mean): divide here as Keras
            # does elsewhere. Nothing happens in one process.
            loss = scale_loss_for_distribution(loss)
        return loss, tape.gradient(loss, self.model.trainable_variables)

    def _apply(self, gradients, lr) -> None:
        """One Adam step with learning rate `lr` (the gradients all-reduced by the optimizer under --nproc N)."""
        self.optimizer.learning_rate.assign(lr)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables, strict=True))

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        return run_steps(self._step, self.train_data, batch_indices, learning_rates, self.device, np.int64)

    def optimizer_hyperparameters(self) -> dict:
        """The optimizer's name and settings by rules name, read back from the Keras optimizer."""
        opt = self.optimizer
        return {
            "optimizer": "adam" if isinstance(opt, keras.optimizers.Adam) else type(opt).__name__,
            "beta1": opt.beta_1,
            "beta2": opt.beta_2,
            "epsilon": opt.epsilon,
        }

    def hyperparameters(self) -> dict:
        opt = self.optimizer
        loss = self.loss_fn.get_config()
        loss_name = (
            "sigmoid_binary_cross_entropy"
            if type(self.loss_fn) is keras.losses.BinaryCrossentropy
            and loss["from_logits"]
            and loss["reduction"] == "sum_over_batch_size"
            and not loss["label_smoothing"]
            else "other"
        )
        return {
            **self.recipe.as_dict(),
            **self.optimizer_hyperparameters(),
            "weight_decay": opt.weight_decay or 0.0,
            "loss": loss_name,
            "precision": precision_in_use(self.model, opt),
        }
