"""Neutral weights <-> resnet-small's ONNX initializers (and ResNet-50's: image-resnet50-standard uses these).

    from levelfield.reference.fmnist_resnet.onnxruntime.weights import to_initializers, to_neutral
    initializers = to_initializers(init_weights(0))      # {name: array} in ONNX's layouts
    neutral = to_neutral(initializers)

The initializers keep the neutral names (model.py's graph declares them so);
only layouts change:

| neutral name                      | ONNX initializer                    | layout change |
| --------------------------------- | ----------------------------------- | ------------- |
| *.kernel of a conv [kh, kw, in, out] | the same name, Conv's W [out, in, kh, kw] | HWIO -> OIHW |
| *.bn*.{scale,bias,mean,var} [C]   | the same, BatchNormalization's scale, B, input_mean, input_var | none |
| head.kernel [in, out], head.bias  | the same, MatMul's right operand and Add's | none |
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.fmnist_resnet.common.model_spec import PARAMETER_SHAPES
from levelfield.reference.weights import check_weights


def to_initializers(
    weights: dict[str, np.ndarray], shapes: dict[str, tuple] = PARAMETER_SHAPES, task_id: str = "fmnist-resnet"
) -> dict[str, np.ndarray]:
    """ONNX initializers (contiguous float32) of neutral weights checked against `shapes`."""
    check_weights(weights, shapes, f"{task_id}/onnxruntime load")
    out = {}
    for name in shapes:  # the spec's order: the model file's layout is then independent of the dict's order
        value = weights[name]
        out[name] = np.ascontiguousarray(value.transpose(3, 2, 0, 1) if value.ndim == 4 else value, np.float32)
    return out


def to_neutral(initializers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The neutral weights back from the initializers (OIHW -> HWIO)."""
    return {
        name: np.ascontiguousarray(value.transpose(2, 3, 1, 0) if value.ndim == 4 else value, np.float32)
        for name, value in initializers.items()
    }
