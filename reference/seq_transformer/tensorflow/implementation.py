"""seq-transformer in TensorFlow: Keras model + GradientTape step in tf.function(jit_compile=True).

    from levelfield.reference.seq_transformer.tensorflow.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": plain TF eager, no tf.function
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 12, 10]

The training set lives in device tensors; `run_steps` (reference/frameworks/tensorflow/steps.py)
calls the XLA-compiled step once per batch with that step's row indices
(int32 [B]) and lr, made tensors once per call on the host, and the step
gathers the batch on the device, so no batch crosses from the host. The step
takes the training tensors, the rows and the lr as arguments under a fixed
input signature (one trace for every batch size, no retrace per step).

Optimizer: Keras' AdamW adds epsilon to sqrt(v) before bias correction
(alpha = lr*sqrt(1-b2^t)/(1-b1^t); p -= alpha*m/(sqrt(v)+eps)), which is not
torch's update; `TorchAdamW` (reference/frameworks/tensorflow/optimizers.py) overrides only
`update_step` with torch's form
p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps). Keras' own decoupled
decay (p -= lr*wd*p, before the update, on every trainable variable) is
already torch's. Embedding gradients are densified: torch's AdamW updates
every row (moments decay, weight decay) whether it was looked up or not.

Under `levelfield train --nproc N` (reference/frameworks/tensorflow/parallel.py) the model and
optimizer are mirrored by MultiWorkerMirroredStrategy: Keras divides the loss
by N in each replica and the optimizer sums the ranks' gradients, their mean
(reference/frameworks/tensorflow/steps.py `train_step`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import levelfield.reference.frameworks.tensorflow.keras_backend  # noqa: F401 - first: Keras' backend and TensorFlow's log level
from levelfield.reference import interface
from levelfield.reference.frameworks.tensorflow.optimizers import TorchAdamW
from levelfield.reference.frameworks.tensorflow.parallel import strategy_scope, tf_device
from levelfield.reference.frameworks.tensorflow.steps import (
    DTYPE_POLICIES,
    determinism_settings,
    precision_in_use,
    run_steps,
    train_step,
)
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.inputs import MAX_PREDICT_BATCH, pad_rows, predict_chunks
from levelfield.reference.seq_transformer.tensorflow.model import build_model, keras
from levelfield.reference.seq_transformer.tensorflow.weights import export_neutral, load_neutral

_ROWS = tf.TensorSpec([None], tf.int32)  # row indices of one batch [B]
_LR = tf.TensorSpec([], tf.float32)  # this step's learning rate


class Implementation(interface.Implementation):
    task_id = "seq-transformer"
    framework = "tensorflow"
    implements = {"optimizer": "adamw", "loss": "softmax_cross_entropy"}  # precisions: fp32 only (the default)
    multiprocess_devices = ("cpu", "cuda")
    spec: model_spec.TransformerSpec = model_spec.SPEC  # the sizes (seq-transformer-standard: its own)
    # seq-transformer-standard sets these: a smaller predict chunk, and predict answering the argmax token
    # ids int32 [N, seq_len] instead of logits, which at BERT's vocabulary would be 15 MiB per row.
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = False

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        # --device (cpu, cuda, cuda:N), else the first GPU, else the CPU (not yet run on a GPU: docs/scale.md).
        self.device = tf_device(device)
        with tf.device(self.device), strategy_scope():  # mirrored under --nproc N, as is the optimizer
            self.model = self._build_model(recipe)
        tokens_spec = tf.TensorSpec([None, self.spec.seq_len], tf.int32)  # tokens or labels [N, 12]
        self.loss_fn = self._build_loss(recipe)
        self.train_data = None  # (tokens, labels) on the device, from set_train_data
        # One trace for every batch size; XLA compiles one program per padded size (at most 11,
        # see predict_chunks) and caches it.
        self._forward = (
            tf.function(self._predict_batch, jit_compile=True, input_signature=[tokens_spec])
            if mode == interface.COMPILED
            else self._predict_batch
        )
        with tf.device(self.device), strategy_scope():
            self.optimizer = self._build_optimizer(recipe)
            self.optimizer.build(self.model.trainable_variables)  # slots exist before any trace
        # One trace for any data size; `load` resets the optimizer's variables in place, so never again.
        self._step = train_step(
            self._gradients, self._apply, mode == interface.COMPILED, [tokens_spec, tokens_spec, _ROWS, _LR]
        )

    def _build_model(self, recipe: interface.Recipe) -> keras.Model:
        """The network at this task's spec under the precision's dtype policy (bf16: mixed_bfloat16), variables
        created (in __init__'s device and strategy scope)."""
        return build_model(self.spec, DTYPE_POLICIES[recipe.precision])

    def _build_loss(self, recipe: interface.Recipe) -> keras.losses.Loss:
        """Mean over all B*12 positions ("sum_over_batch_size" divides by the number of labels)."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum_over_batch_size")

    def _build_optimizer(self, recipe: interface.Recipe) -> keras.optimizers.Optimizer:
        """torch's AdamW (TorchAdamW), built by __init__ in the device and strategy scope."""
        fixed = recipe.fixed
        return TorchAdamW(
            learning_rate=recipe.learning_rate,
            beta_1=fixed["beta1"],
            beta_2=fixed["beta2"],
            epsilon=fixed["epsilon"],
            weight_decay=fixed["weight_decay"],
            amsgrad=False,
        )

    def _new_optimizer(self) -> None:
        """Fresh optimizer state: step count, moments and LR zeroed (the LR is assigned at every step).

        The same variables, not a new optimizer: new variables would mean a new traced step, and so an XLA
        compilation inside the timed run after the trainer's warm-up reloads the weights (5 s here).
        """
        for variable in self.optimizer.variables:
            variable.assign(tf.zeros_like(variable))

    def version(self) -> str:
        return tf.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        load_neutral(self.model, weights)
        self._new_optimizer()

    def export(self) -> dict[str, np.ndarray]:
        return export_neutral(self.model)

    def _predict_batch(self, tokens):
        logits = self.model(tokens, training=False)
        return tf.argmax(logits, axis=-1, output_type=tf.int32) if self.predict_argmax else logits

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 12, 10] for any N >= 1.

        Rows go through in chunks of at most 1024, each padded with token-0
        rows to the next power of two (common/inputs.py predict_chunks), so the
        compiled function sees at most 11 input shapes; padded rows are sliced off.
        """
        tokens = np.asarray(inputs["tokens"], np.int32)
        outputs = []
        with tf.device(self.device):
            for start, stop, size in predict_chunks(len(tokens), self.max_predict_batch):
                outputs.append(self._forward(tf.constant(pad_rows(tokens[start:stop], size)))[: stop - start])
            outputs = tf.concat(outputs, axis=0).numpy()
            return outputs if self.predict_argmax else outputs.astype(np.float32)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        with tf.device(self.device):
            self.train_data = (
                tf.constant(np.asarray(inputs["tokens"], np.int32)),  # int32 [N, 12]
                tf.constant(np.asarray(labels, np.int32)),  # int32 [N, 12]
            )

    def _gradients(self, tokens, labels, rows):
        """The loss on rows [B] of tokens / labels [N, 12] (before the update) and its gradients."""
        return self._batch_gradients(tf.gather(tokens, rows), tf.gather(labels, rows))  # [B, 12] each

    def _batch_gradients(self, x, targets):
        """The loss of the model on a batch x [B, 12] against `targets` [B, 12] and its gradients."""
        with tf.GradientTape() as tape:
            loss = self.loss_fn(targets, self.model(x, training=True))  # logits [B, 12, 10]
        return loss, tape.gradient(loss, self.model.trainable_variables)

    def _apply(self, gradients, lr) -> None:
        """One AdamW step (the gradients all-reduced by the optimizer under --nproc N)."""
        self.optimizer.learning_rate.assign(lr)  # read by the decay and by update_step
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(gradients, variables, strict=True))

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        return run_steps(self._step, self.train_data, batch_indices, learning_rates, self.device, np.int32)

    def hyperparameters(self) -> dict:
        opt = self.optimizer
        loss_config = self.loss_fn.get_config()
        return {
            **self.recipe.as_dict(),
            "optimizer": "adamw" if isinstance(opt, keras.optimizers.AdamW) else type(opt).__name__.lower(),
            "beta1": opt.beta_1,
            "beta2": opt.beta_2,
            "epsilon": opt.epsilon,
            "weight_decay": opt.weight_decay,
            "loss": (
                "softmax_cross_entropy"
                if isinstance(self.loss_fn, keras.losses.SparseCategoricalCrossentropy)
                and loss_config.get("from_logits")
                and loss_config.get("reduction") == "sum_over_batch_size"
                else repr(self.loss_fn)
            ),
            "precision": precision_in_use(self.model, opt),
        }
