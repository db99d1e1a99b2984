"""Neutral weights <-> the Keras ResNetSmall's variables; image-resnet50-standard's ResNet-50 maps the same way.

    from levelfield.reference.fmnist_resnet.tensorflow.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)
    load_neutral(resnet50, weights, SPEC.parameter_shapes, "image-resnet50-standard")   # another ResNet's names

Keras' layouts already are the neutral ones (Conv2D kernel HWIO, Dense kernel
[in, out]), so the mapping only renames; variables are found by attribute, not
by Keras' auto-generated paths:

| neutral name                   | Keras variable                                    |
| ------------------------------ | ------------------------------------------------- |
| stem.conv.kernel               | model.conv.kernel                                 |
| stem.bn.{scale,bias,mean,var}  | model.bn.{gamma,beta,moving_mean,moving_variance} |
| blockK.conv1.kernel            | model.blocks["blockK"].conv1.kernel               |
| blockK.bn1.{...}               | model.blocks["blockK"].bn1.{gamma,...}            |
| blockK.conv2 / bn2             | model.blocks["blockK"].conv2 / bn2                |
| blockK.proj.kernel / proj_bn   | model.blocks["blockK"].proj / proj_bn             |
| head.kernel / head.bias        | model.head.kernel / model.head.bias               |
ResNet-50's blocks (stage{s}_block{b}.*, with conv3 / bn3) are in model.blocks
as fmnist-resnet's blockK are; the stem, the head and the layouts are the same.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.fmnist_resnet.common.model_spec import PARAMETER_SHAPES
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.weights import check_weights

_BN_PARTS = {"scale": "gamma", "bias": "beta", "mean": "moving_mean", "var": "moving_variance"}


def variables(model: keras.Model, parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES) -> dict:
    """neutral name -> keras.Variable, for every name of `parameter_shapes` (ResNetSmall's, or another ResNet's)."""
    out = {}
    for name in parameter_shapes:
        *path, part = name.split(".")  # e.g. ["block2", "proj_bn"], "mean"
        if path == ["head"]:
            layer = model.head
        elif path[0] == "stem":  # stem.conv / stem.bn live on the model itself
            layer = getattr(model, path[1])
        else:
            layer = getattr(model.blocks[path[0]], path[1])
        is_bn = isinstance(layer, keras.layers.BatchNormalization)
        out[name] = getattr(layer, _BN_PARTS[part] if is_bn else part)
    return out


def load_neutral(
    model: keras.Model,
    weights: dict[str, np.ndarray],
    parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES,
    task_id: str = "fmnist-resnet",
) -> None:
    check_weights(weights, parameter_shapes, f"{task_id}/tensorflow load")
    for name, variable in variables(model, parameter_shapes).items():
        variable.assign(weights[name])


def export_neutral(model: keras.Model, parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES) -> dict[str, np.ndarray]:
    return {
        name: np.array(variable.numpy(), dtype=np.float32)
        for name, variable in variables(model, parameter_shapes).items()
    }
