"""fmnist-resnet in TensorFlow: Keras 3 model, GradientTape train step in tf.function(jit_compile=True).

    from levelfield.reference.fmnist_resnet.tensorflow.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": plain eager TF, no tf.function
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))

The training set stays on the device as tensors (images NHWC, labels);
`run_steps` (reference/frameworks/tensorflow/steps.py) calls the XLA-compiled step once per batch
with that step's row indices (int32 [B]) and learning rate, made tensors once
per call on the host, and the step gathers the batch on the device. The
learning rate is an argument of the step (assigned to the optimizer's variable
inside it), so changing it never retraces.

Under `levelfield train --nproc N` (reference/frameworks/tensorflow/parallel.py) the model and
optimizer are mirrored by MultiWorkerMirroredStrategy, each rank computes the
gradient of its share of the global batch, and Keras averages the ranks'
gradients (reference/frameworks/tensorflow/steps.py `train_step`). Batch norm is per process on every
device: Keras' BatchNormalization normalises each replica's share unless it is
built with synchronized=True, and unsynchronised batch norm is TensorFlow's
default under a strategy (as in the TF Model Garden's ResNet, whose sync BN is
an opt-in flag). It also keeps the compiled forward pass free of collectives,
which XLA cannot compile on a CPU; MLPerf's ResNet and the rules 1.1 spans
allow it, and the log states it (model_bn_span = B / N). Each rank's moving
statistics are its own: rank 0 evaluates with those of its shares.

Precision (rules 1.1: fp32, bf16, fp16) is Keras' mixed precision: the model's
layers take the dtype policy mixed_bfloat16 or mixed_float16 (model.py), and
for fp16 the optimizer is wrapped in a LossScaleOptimizer, whose `scale_loss`
the step differentiates (reference/frameworks/tensorflow/steps.py); predict uses the same policy.

image-resnet50-standard subclasses this class and overrides only what
differs, through the hooks that `__init__` calls, as every implementation has
them (docs/architecture.md, "Interfaces"): `_build_model(recipe)`, the Keras
model (here ResNetSmall; built in the device and strategy scope), and
`_build_loss(recipe)`, the Keras loss (here mean sparse cross-entropy on
logits); `_build_optimizer(recipe)` is TorchSGD. The rest of `__init__` serves
both: the device, the compiled forward, the LossScaleOptimizer and the XLA
step; `_batch_gradients(x, targets)` is the GradientTape of one batch, whether
gathered from the resident set (`_gradients(images, labels, rows)`, here) or
cut by an input pipeline (its `_gradients(x, y)`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.common.inputs import pad_rows, predict_chunks
from levelfield.reference.fmnist_resnet.tensorflow import weights
from levelfield.reference.fmnist_resnet.tensorflow.model import ResNetSmall
from levelfield.reference.frameworks.tensorflow.base import FrameworkImplementation
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.frameworks.tensorflow.optimizers import TorchSGD
from levelfield.reference.frameworks.tensorflow.parallel import strategy_scope
from levelfield.reference.frameworks.tensorflow.steps import (
    DTYPE_POLICIES,
    inner,
    loss_scaled,
    precision_in_use,
    reset_loss_scale,
    train_step,
)


class Implementation(FrameworkImplementation):
    task_id = "fmnist-resnet"
    weight_mapping = weights
    implements = {"optimizer": "sgd", "loss": "softmax_cross_entropy"}
    # Keras dtype policies (model.py); fp16 with a LossScaleOptimizer (tf_steps.loss_scaled).
    precisions = ("fp32", "bf16", "fp16")
    multiprocess_devices = ("cpu", "cuda")
    # Keras' BatchNormalization under a strategy normalises each replica's share (synchronized=False, its
    # default): see the module docstring.
    batch_norm_spans = {"cpu": "per_process", "cuda": "per_process"}

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        with tf.device(self.device), strategy_scope():  # mirrored under --nproc N, as is the optimizer
            # Training and predict run under the same policy (what was trained is what is served).
            self.model = self._build_model(recipe)
        self.loss_fn = self._build_loss(recipe)
        compiled = mode == interface.COMPILED
        self._forward = tf.function(self._predict_batch, jit_compile=True) if compiled else self._predict_batch
        with tf.device(self.device), strategy_scope():
            # fp16: inside a LossScaleOptimizer
            self.optimizer = loss_scaled(self._build_optimizer(recipe), recipe.precision)
            self.optimizer.build(self.model.trainable_variables)
        # (images, labels, rows, lr) -> loss; image-resnet50-standard: (x, y, lr) -> loss, by its _gradients.
        self._step = train_step(self._gradients, self._apply, compiled)

    def _build_model(self, recipe: interface.Recipe) -> keras.Model:
        """The network under the precision's dtype policy, built by __init__ in the device and strategy scope;
        image-resnet50-standard: its ResNet-50."""
        return ResNetSmall(DTYPE_POLICIES[recipe.precision])

    def _build_loss(self, recipe: interface.Recipe) -> keras.losses.Loss:
        """Mean over the batch of softmax cross-entropy on logits; image-resnet50-standard: with label
        smoothing, on one-hot targets."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum_over_batch_size")

    def _build_optimizer(self, recipe: interface.Recipe) -> keras.optimizers.Optimizer:
        """torch's SGD (TorchSGD); __init__ wraps it for fp16 and builds it in the device and strategy scope."""
        fixed = recipe.fixed
        return TorchSGD(
            learning_rate=recipe.learning_rate,
            momentum=fixed["momentum"],
            weight_decay=fixed["weight_decay"],
            nesterov=fixed["nesterov"],
        )

    def _new_optimizer(self) -> None:
        """Fresh optimizer state: momentum buffers and step count zeroed (the same variables: no retrace of
        the step), and fp16's loss scale back to its start (not zero, as the base's would leave it)."""
        for buf in inner(self.optimizer).momentums:
            buf.assign(np.zeros(buf.shape, np.float32))
        inner(self.optimizer).iterations.assign(0)
        self.optimizer.iterations.assign(0)
        reset_loss_scale(self.optimizer)

    def _predict_batch(self, images):
        return self.model(images, training=False)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 10] with the BN moving statistics, for any N >= 1.

        Rows go through in chunks of at most 1024, each zero-padded to the next
        power of two (common/inputs.py predict_chunks), so XLA compiles at most
        11 shapes; padded rows are sliced off.
        """
        images = inputs["images"]
        outputs = []
        with tf.device(self.device):
            for start, stop, size in predict_chunks(len(images)):
                x = tf.convert_to_tensor(pad_rows(images[start:stop], size)[..., None], tf.float32)  # NHWC
                outputs.append(self._forward(x)[: stop - start])
            return tf.concat(outputs, 0).numpy().astype(np.float32)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        with tf.device(self.device):
            self.train_data = (  # (images, labels) on the device
                tf.constant(np.asarray(inputs["images"], np.float32)[..., None]),  # [N, 28, 28, 1]
                tf.constant(np.asarray(labels, np.int32)),  # [N]
            )

    def _gradients(self, images, labels, rows):
        """The loss on rows [batch] of the resident training set and its gradients."""
        return self._batch_gradients(tf.gather(images, rows), tf.gather(labels, rows))

    def _batch_gradients(self, x, targets):
        """The loss of the model on a batch x against `targets` (what loss_fn takes) and its gradients."""
        with tf.GradientTape() as tape:
            loss = self.loss_fn(targets, self.model(x, training=True))
            scaled = self.optimizer.scale_loss(loss)  # fp16: times the dynamic loss scale; else the loss
        return loss, tape.gradient(scaled, self.model.trainable_variables)

    def _apply(self, gradients, lr) -> None:
        """One SGD update with learning rate `lr` (the gradients all-reduced by the optimizer under --nproc N)."""
        self.optimizer.learning_rate = lr
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables, strict=True))

    def hyperparameters(self) -> dict:
        opt = inner(self.optimizer)
        loss = self.loss_fn
        is_mean_xent = (
            isinstance(loss, keras.losses.SparseCategoricalCrossentropy)
            and loss.reduction == "sum_over_batch_size"
            and loss.get_config().get("from_logits")
        )
        return {
            **self.recipe.as_dict(),
            "optimizer": "sgd" if isinstance(opt, TorchSGD) else type(opt).__name__.lower(),
            "momentum": opt.momentum,
            "nesterov": opt.nesterov,
            "weight_decay": opt.coupled_weight_decay,
            "loss": "softmax_cross_entropy" if is_mean_xent else repr(loss),
            "precision": precision_in_use(self.model, self.optimizer),
        }
