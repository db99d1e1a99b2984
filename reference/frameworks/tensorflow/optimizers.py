"""Keras optimizers that update exactly as torch.optim's, for the TensorFlow implementations.

    from levelfield.reference.frameworks.tensorflow.optimizers import TorchAdam, TorchAdamW, TorchSGD
    optimizer = TorchSGD(learning_rate=0.1, momentum=0.9, weight_decay=5e-4)   # fmnist-resnet
    optimizer = TorchAdamW(learning_rate=1e-3, beta_1=0.9, beta_2=0.999, epsilon=1e-8, weight_decay=0.01)

PyTorch's optimizers are the definition the other frameworks match (each
task's README says which). Keras' own SGD, Adam and AdamW differ in where the
learning rate, epsilon or weight decay enter, so each class here overrides
`update_step` (and TorchSGD its slots) with torch's formula.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from keras import ops

from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend


class TorchSGD(keras.optimizers.Optimizer):
    """SGD with momentum and coupled L2 weight decay, update for update as torch.optim.SGD:

        g <- g + weight_decay * p;  buf <- momentum * buf + g  (buf = 0 before step 1, so buf = g);
        p <- p - lr * buf

    Keras' own SGD keeps lr inside the buffer (buf <- momentum * buf - lr * g),
    which differs from torch as soon as lr changes between steps, and its
    `weight_decay` is decoupled; hence this subclass. `learning_rate` is the
    base class's variable, assigned once per step.
    """

    def __init__(
        self,
        learning_rate: float,
        momentum: float,
        weight_decay: float,
        nesterov: bool = False,
        name: str = "torch_sgd",
        **kwargs: Any,
    ):
        if nesterov:
            raise NotImplementedError("nesterov momentum is not needed by any levelfield task")
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.momentum = float(momentum)
        self.coupled_weight_decay = float(weight_decay)  # not the base class's (decoupled) weight_decay
        self.nesterov = bool(nesterov)

    def build(self, variables: list[tf.Variable]) -> None:
        if self.built:
            return
        super().build(variables)
        self.momentums = [self.add_variable_from_reference(v, "momentum") for v in variables]

    def update_step(
        self, gradient: tf.Tensor | tf.IndexedSlices, variable: tf.Variable, learning_rate: tf.Tensor | float
    ) -> None:
        lr = ops.cast(learning_rate, variable.dtype)
        grad = ops.add(ops.cast(gradient, variable.dtype), ops.multiply(self.coupled_weight_decay, variable))
        buf = self.momentums[self._get_variable_index(variable)]
        self.assign(buf, ops.add(ops.multiply(self.momentum, buf), grad))
        self.assign_sub(variable, ops.multiply(lr, buf))

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "momentum": self.momentum,
            "weight_decay": self.coupled_weight_decay,
            "nesterov": self.nesterov,
        }


class TorchAdam(keras.optimizers.Adam):
    """Adam with torch.optim.Adam's / Optax's epsilon placement.

    Keras' Adam divides by sqrt(v) + eps with v not bias-corrected, which is
    sqrt(v_hat) + eps / sqrt(1 - beta2^t) in torch's terms: a different
    update early in training. Here, as torch and Optax:
        m <- m + (1 - beta1) (g - m);  v <- v + (1 - beta2) (g^2 - v)
        w <- w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    """

    def update_step(
        self, gradient: tf.Tensor | tf.IndexedSlices, variable: tf.Variable, learning_rate: tf.Tensor | float
    ) -> None:
        lr = tf.cast(learning_rate, variable.dtype)
        gradient = tf.convert_to_tensor(gradient)  # embedding grads arrive as IndexedSlices: use them dense
        step = tf.cast(self.iterations + 1, variable.dtype)
        bias_correction1 = 1 - tf.pow(tf.cast(self.beta_1, variable.dtype), step)
        bias_correction2 = 1 - tf.pow(tf.cast(self.beta_2, variable.dtype), step)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (tf.square(gradient) - v) * (1 - self.beta_2))
        denominator = tf.sqrt(v) / tf.sqrt(bias_correction2) + self.epsilon
        self.assign_sub(variable, (lr / bias_correction1) * m / denominator)


class TorchAdamW(keras.optimizers.AdamW):
    """keras.optimizers.AdamW with epsilon added to the bias-corrected sqrt(v), as torch.optim.AdamW."""

    def update_step(
        self, gradient: tf.Tensor | tf.IndexedSlices, variable: tf.Variable, learning_rate: tf.Tensor | float
    ) -> None:
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype)
        # The embedding's gradient is tf.IndexedSlices; Keras would then update only the looked-up
        # rows, once per occurrence. torch's AdamW is dense: densify (sums duplicate rows).
        gradient = ops.cast(tf.convert_to_tensor(gradient), dtype)
        step = ops.cast(self.iterations + 1, dtype)
        bias_correction1 = 1 - ops.power(ops.cast(self.beta_1, dtype), step)
        bias_correction2 = 1 - ops.power(ops.cast(self.beta_2, dtype), step)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        denominator = ops.add(ops.divide(ops.sqrt(v), ops.sqrt(bias_correction2)), self.epsilon)
        self.assign_sub(variable, ops.divide(ops.multiply(m, lr / bias_correction1), denominator))
