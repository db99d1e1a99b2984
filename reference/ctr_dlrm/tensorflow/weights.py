"""Neutral weights <-> the Keras DLRMSmall's variables.

    from levelfield.reference.ctr_dlrm.tensorflow.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

| neutral name                     | Keras layer / variable                 | layout change |
| -------------------------------- | -------------------------------------- | ------------- |
| embedding{f}.table [rows, 16]    | embedding{f} / embeddings [rows, 16]   | none          |
| bottom.dense{i}.kernel [in, out] | bottom_dense{i} / kernel [in, out]     | none          |
| bottom.dense{i}.bias [out]       | bottom_dense{i} / bias                 | none          |
| top.dense{i}.kernel [in, out]    | top_dense{i} / kernel [in, out]        | none          |
| top.dense{i}.bias [out]          | top_dense{i} / bias                    | none          |

Keras already stores dense kernels as [in, out] and embeddings as [rows, dim],
so the mapping is names only.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.ctr_dlrm.tensorflow.model import DLRMSmall, layer_name
from levelfield.reference.frameworks.tensorflow.keras_backend import keras
from levelfield.reference.weights import check_weights

_PARTS = {"table": "embeddings", "kernel": "kernel", "bias": "bias"}


def variable_for(model: DLRMSmall, name: str) -> keras.Variable:
    """The Keras variable holding neutral weight `name`."""
    prefix, part = name.rsplit(".", 1)
    layer = model.get_layer(layer_name(prefix))
    return getattr(layer, _PARTS[part])


def load_neutral(model: DLRMSmall, weights: dict[str, np.ndarray]) -> None:
    check_weights(weights, model.spec.parameter_shapes, f"{model.spec.task_id}/tensorflow load")
    for name, value in weights.items():
        variable_for(model, name).assign(value)


def export_neutral(model: DLRMSmall) -> dict[str, np.ndarray]:
    return {name: np.array(variable_for(model, name).numpy(), dtype=np.float32) for name in model.spec.parameter_shapes}
