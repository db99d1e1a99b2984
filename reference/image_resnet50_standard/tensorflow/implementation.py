"""image-resnet50-standard in TensorFlow: fmnist-resnet's implementation at ResNet-50's sizes, fed by tf.data.

    impl = Implementation(Recipe.from_task(task))           # mode="eager": plain eager TF, no tf.function
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))   # uint8 [N, 256, 256, 3]
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))     # uint8 centre crops -> float32 [N, 1000]

Everything is fmnist-resnet's (reference/fmnist_resnet/tensorflow/implementation.py),
whose `__init__` this class inherits: the Keras model, the GradientTape step
under tf.function(jit_compile=True) (`_batch_gradients`), torch's SGD update
(TorchSGD), the learning rate as a step argument, the Keras dtype policies
and LossScaleOptimizer, MultiWorkerMirroredStrategy over processes. What
differs is in its hooks and the input side: the network (`_build_model`:
ResNet50 of a ResNetSpec), the loss (`_build_loss`: Keras'
CategoricalCrossentropy with label_smoothing 0.1, on the one-hot labels that
`_gradients` makes; torch's label_smoothing), the weights' layout (load,
export), and the input pipeline, whose state (workers, pipeline, step
counter) is all its `__init__` adds.

The input pipeline runs inside train_steps, inside the timed run as in MLPerf:
the training set stays uint8 on the host, and each step's batch is cut (random
crop, flip, normalise) by tf.data (reference/frameworks/tensorflow/pipeline.py) while the previous
steps run, and handed to the shared step loop (tf_steps.run_steps); the crops
and flips are common/augment.py's decisions for (step, row), step counted from
the last load(). predict normalises the uint8 centre crops inside its compiled
function.

Several processes (`levelfield train --nproc N`): each rank runs its own
input pipeline, on its own share of the host's CPUs, over the rows
`train_steps` hands it, its contiguous share of every global batch (rank r:
rows r*B/N to (r+1)*B/N - 1 of the one data order). Crops and flips are
decided per (step, row), so the N shares together are exactly the batch one
process would build, and the global batch stays the rules' B. Batch norm is
fmnist-resnet's: per process (Keras' default under a strategy).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.tensorflow.implementation import Implementation as SmallImplementation
from levelfield.reference.fmnist_resnet.tensorflow.weights import export_neutral, load_neutral
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.frameworks.tensorflow.pipeline import Pipeline
from levelfield.reference.frameworks.tensorflow.steps import DTYPE_POLICIES, run_steps
from levelfield.reference.image_resnet50_standard.common.augment import INV_STD, MEAN, input_workers, step_plans
from levelfield.reference.image_resnet50_standard.common.inputs import pad_rows, predict_chunks
from levelfield.reference.image_resnet50_standard.common.model_spec import IMPLEMENTS, SPEC, ResNetSpec
from levelfield.reference.image_resnet50_standard.tensorflow.model import ResNet50


class Implementation(SmallImplementation):
    task_id = "image-resnet50-standard"
    implements = IMPLEMENTS
    spec: ResNetSpec = SPEC  # the sizes (the equivalence tests set a reduced spec on a subclass)

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.input_workers = input_workers()  # the trainer logs it (levelfield_input_workers)
        self.pipeline = None
        self.step = 0  # optimizer steps since load(): the augmentation's counter (common/augment.py)

    def _build_model(self, recipe: interface.Recipe) -> keras.Model:
        return ResNet50(self.spec, DTYPE_POLICIES[recipe.precision])

    def _build_loss(self, recipe: interface.Recipe) -> keras.losses.Loss:
        # Mean over the batch of softmax cross-entropy against 0.9 one-hot + 0.1 / classes (torch's smoothing).
        return keras.losses.CategoricalCrossentropy(
            from_logits=True, label_smoothing=recipe.fixed["label_smoothing"], reduction="sum_over_batch_size"
        )

    def load(self, weights: dict[str, np.ndarray]) -> None:
        load_neutral(self.model, weights, self.spec.parameter_shapes, self.task_id)  # fmnist-resnet's mapping
        self._new_optimizer()
        self.step = 0

    def export(self) -> dict[str, np.ndarray]:
        return export_neutral(self.model, self.spec.parameter_shapes)

    def _predict_batch(self, pixels):
        x = (tf.cast(pixels, tf.float32) - MEAN) * INV_STD  # uint8 NHWC -> normalised float32
        return self.model(x, training=False)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 1000] of uint8 centre crops, BN moving statistics; chunks of at most 64 rows,
        each zero-padded to a power of two (common/inputs.py)."""
        images = inputs["images"]
        outputs = []
        with tf.device(self.device):
            for start, stop, size in predict_chunks(len(images)):
                x = tf.convert_to_tensor(pad_rows(images[start:stop], size), tf.uint8)
                outputs.append(self._forward(x)[: stop - start])
            return tf.concat(outputs, 0).numpy().astype(np.float32)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        if self.pipeline is not None:
            self.pipeline.close()
        self.train_data = (inputs["images"], labels)  # uint8 [N, 256, 256, 3] on the host; tf.data crops it
        self.pipeline = Pipeline(inputs["images"], labels, self.spec.image_size, self.input_workers)

    def _gradients(self, x, y):
        """The loss on an augmented batch x [B, 224, 224, 3], labels y [B], and its gradients."""
        return self._batch_gradients(x, tf.one_hot(y, self.spec.num_classes))

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        plans = step_plans(self.step, batch_indices, self.train_data[0].shape[1], self.spec.image_size)
        # The step takes each batch as tf.data cuts it: (x, y, lr) -> loss, by this class's _gradients.
        batches = self.pipeline.batches(batch_indices, plans)
        losses = run_steps(self._step, (), batch_indices, learning_rates, self.device, np.int32, batches)
        self.step += len(batch_indices)
        return losses

    def hyperparameters(self) -> dict:
        values = super().hyperparameters()
        loss = self.loss_fn
        is_xent = isinstance(loss, keras.losses.CategoricalCrossentropy) and loss.get_config().get("from_logits")
        values["loss"] = "softmax_cross_entropy" if is_xent else repr(loss)
        values["label_smoothing"] = float(loss.get_config()["label_smoothing"])
        return values
