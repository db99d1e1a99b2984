"""Neutral weights <-> the Keras ResNet50's variables: fmnist-resnet's mapping, for any ResNetSpec.

    from levelfield.reference.image_resnet50_standard.tensorflow.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

Keras' layouts are the neutral ones, so the mapping only renames, by attribute
(reference/fmnist_resnet/tensorflow/weights.py has the table): stem.conv /
stem.bn -> model.conv / model.bn, stage{s}_block{b}.* -> model.blocks[...].*,
head.* -> model.head; both functions check against the model's own spec.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.fmnist_resnet.tensorflow.weights import _BN_PARTS
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.image_resnet50_standard.tensorflow.model import ResNet50
from levelfield.reference.weights import check_weights


def variables(model: ResNet50) -> dict:
    """neutral name -> keras.Variable, for every name of the model's spec."""
    out = {}
    for name in model.spec.parameter_shapes:
        *path, part = name.split(".")
        if path == ["head"]:
            layer = model.head
        elif path[0] == "stem":
            layer = getattr(model, path[1])
        else:
            layer = getattr(model.blocks[path[0]], path[1])
        is_bn = isinstance(layer, keras.layers.BatchNormalization)
        out[name] = getattr(layer, _BN_PARTS[part] if is_bn else part)
    return out


def load_neutral(model: ResNet50, weights: dict[str, np.ndarray]) -> None:
    check_weights(weights, model.spec.parameter_shapes, "image-resnet50-standard/tensorflow load")
    for name, variable in variables(model).items():
        variable.assign(weights[name])


def export_neutral(model: ResNet50) -> dict[str, np.ndarray]:
    return {name: np.array(variable.numpy(), dtype=np.float32) for name, variable in variables(model).items()}
