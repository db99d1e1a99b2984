"""What every TensorFlow implementation shares, once: the class each task's `implementation.py` subclasses.

    from levelfield.reference.ctr_dlrm.tensorflow import weights
    from levelfield.reference.frameworks.tensorflow.base import FrameworkImplementation

    class Implementation(FrameworkImplementation):
        task_id = "ctr-dlrm"
        weight_mapping = weights            # the task's load_neutral(model, weights) / export_neutral(model)
        index_dtype = np.int64              # the rows its step gathers with (default int32)

        def __init__(self, recipe, *, mode=COMPILED, device=None):
            super().__init__(recipe, mode=mode, device=device)     # self.device, self.train_data = None
            with tf.device(self.device), strategy_scope():
                self.model = self._build_model(recipe)
                ...
            self._step = train_step(self._gradients, self._apply, mode == COMPILED)

A task supplies the Keras model, optimizer and loss (`self.model`,
`self.optimizer`, `self.loss_fn`, built by its hooks), the two halves of its
step (`_gradients`, `_apply`) made into `self._step`, and predict; this class
answers the rest of the interface the same way for all of them: the device
(`--device`, else the first GPU, else the CPU; not yet run on a GPU:
docs/scale.md), TensorFlow's version and determinism record, neutral weights
in and out through the task's weight mapping (a load starts the optimizer
afresh), fresh optimizer state, and the shared step loop.

Fresh optimizer state is every optimizer variable zeroed in place (step
count, moments, the learning rate, which the step assigns anyway): the same
variables, not a new optimizer, since new variables would mean a new traced
step, and so an XLA compilation inside the timed run after the trainer's
warm-up reloads the weights (5 s here). A task whose optimizer holds state
that must not start at zero (fmnist-resnet's fp16 loss scale) overrides it.
"""

from __future__ import annotations

from types import ModuleType
from typing import ClassVar

import numpy as np
import tensorflow as tf

from levelfield.reference import interface
from levelfield.reference.frameworks.tensorflow.parallel import tf_device
from levelfield.reference.frameworks.tensorflow.steps import determinism_settings, run_steps


class FrameworkImplementation(interface.Implementation):
    framework = "tensorflow"
    # The task's tensorflow/weights.py: load_neutral(model, weights) and export_neutral(model), neutral names
    # and layouts <-> the Keras model's variables.
    weight_mapping: ClassVar[ModuleType]
    # The dtype of the row indices run_steps hands the step (its input signature's).
    index_dtype: ClassVar[type[np.integer]] = np.int32

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        # --device (cpu, cuda, cuda:N), else the first GPU, else the CPU (not yet run on a GPU: docs/scale.md).
        self.device = tf_device(device)
        self.train_data = None  # the training set's tensors on the device, from set_train_data

    def version(self) -> str:
        return tf.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.weight_mapping.load_neutral(self.model, weights)
        self._new_optimizer()

    def export(self) -> dict[str, np.ndarray]:
        return self.weight_mapping.export_neutral(self.model)

    def _new_optimizer(self) -> None:
        """Fresh optimizer state: every optimizer variable zeroed in place (no retrace of the step)."""
        for variable in self.optimizer.variables:
            variable.assign(tf.zeros_like(variable))

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        return run_steps(self._step, self.train_data, batch_indices, learning_rates, self.device, self.index_dtype)
