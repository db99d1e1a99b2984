"""Neutral weights <-> the DLRM's ONNX initializers: the same names and layouts.

    from levelfield.reference.ctr_dlrm.onnxruntime.weights import to_initializers, to_neutral
    initializers = to_initializers(init_weights(0), SPEC.parameter_shapes, "ctr-dlrm")

model.py's graph uses every weight in the neutral layout as it is: each
table [rows, D] is Gather's data, dense kernels [in, out] MatMul's right
operand, biases [out] Add's. So this module only checks the weights against
the spec and fixes dtype and contiguity.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.weights import check_weights


def to_initializers(weights: dict[str, np.ndarray], shapes: dict[str, tuple], task_id: str) -> dict[str, np.ndarray]:
    """ONNX initializers (contiguous float32, the spec's order) of neutral weights checked against `shapes`."""
    check_weights(weights, shapes, f"{task_id}/onnxruntime load")
    return {name: np.ascontiguousarray(weights[name], np.float32) for name in shapes}


def to_neutral(initializers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The neutral weights back (copies)."""
    return {name: np.array(value, np.float32) for name, value in initializers.items()}
