"""ctr-dlrm-standard in TensorFlow: ctr-dlrm's implementation at MLPerf DLRM's shapes, with plain SGD.

Called as every implementation is (reference/interface.py); predict answers float32 logits [N].

Everything but the shapes and the optimizer is ctr-dlrm's (reference/ctr_dlrm/
tensorflow/implementation.py): the GradientTape step under
tf.function(jit_compile=True), predict in padded power-of-two chunks. The
optimizer is Keras' SGD without momentum (p -= lr * g, torch's update when
there is no momentum buffer), MLPerf DLRM v1's reference recipe; the tables'
gradients are tf.IndexedSlices, so it scatters into the looked-up rows only.

Several processes (`levelfield train --nproc N`): MultiWorkerMirroredStrategy,
the tables' IndexedSlices kept sparse (`sparse_embeddings`): each rank's
looked-up rows and their gradients are all-gathered, and every rank scatters
all of them, duplicates summed, as one process scatters its batch's
(reference/frameworks/tensorflow/steps.py `train_step`).
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.tensorflow.implementation import Implementation as SmallImplementation
from levelfield.reference.ctr_dlrm_standard.common.model_spec import IMPLEMENTS, SPEC
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.interface import Recipe


class Implementation(SmallImplementation):
    task_id = "ctr-dlrm-standard"
    # bf16 too, for inference (rules 1.2): the Keras dtype policy mixed_bfloat16, in the tiny task's model.
    precisions = ("fp32", "bf16")
    implements = IMPLEMENTS
    multiprocess_devices = ("cpu", "cuda")
    sparse_embeddings = True  # under --nproc N: all-gather the tables' looked-up rows, not all-reduce the tables
    spec = SPEC

    def _build_optimizer(self, recipe: Recipe) -> keras.optimizers.Optimizer:
        return keras.optimizers.SGD(learning_rate=recipe.learning_rate, momentum=0.0, nesterov=False)

    def optimizer_hyperparameters(self) -> dict:
        opt = self.optimizer
        name = "sgd" if type(opt) is keras.optimizers.SGD else type(opt).__name__
        return {"optimizer": name, "momentum": opt.momentum, "nesterov": opt.nesterov}
