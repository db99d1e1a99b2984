"""Neutral weights <-> the Keras EncoderSmall's variables (by variable path).

    from levelfield.reference.seq_transformer.tensorflow.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

Keras paths below omit the model's own name (`encoder_small/`); K is 0 or 1.

| neutral name                           | Keras variable path                       | layout change        |
| -------------------------------------- | ----------------------------------------- | -------------------- |
| token_embedding.embedding [10,64]      | token_embedding/embeddings                | none                 |
| position_embedding.embedding [12,64]   | position_embedding/embeddings             | none                 |
| layerK.attention_norm.{scale,bias}     | layerK/attention_norm/{gamma,beta}        | none                 |
| layerK.attention.QKV.kernel [64,64]    | layerK/attention/QKV/kernel [64,4,16]     | reshape (head-major) |
| layerK.attention.QKV.bias [64]         | layerK/attention/QKV/bias [4,16]          | reshape              |
| layerK.attention.output.kernel [64,64] | layerK/attention/attention_output/kernel  | reshape to [4,16,64] |
| layerK.attention.output.bias [64]      | layerK/attention/attention_output/bias    | none                 |
| layerK.mlp_norm.{scale,bias}           | layerK/mlp_norm/{gamma,beta}              | none                 |
| layerK.mlp.dense{1,2}.{kernel,bias}    | layerK/dense{1,2}/{kernel,bias}           | none ([in, out])     |
| final_norm.{scale,bias}                | final_norm/{gamma,beta}                   | none                 |
| head.{kernel,bias}                     | head/{kernel,bias}                        | none                 |

QKV stands for each of query, key, value. Every change is a row-major
reshape, so export reshapes back to the neutral shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from levelfield.reference.weights import check_weights

if TYPE_CHECKING:  # annotations only: this mapping needs no Keras import of its own
    from levelfield.reference.seq_transformer.tensorflow.model import EncoderSmall

_NORM_PARTS = {"scale": "gamma", "bias": "beta"}


def keras_path(name: str) -> str:
    """The variable path (without the model's name) of one neutral name."""
    path, part = name.rsplit(".", 1)
    if part == "embedding":
        return f"{path}/embeddings"
    if path.endswith("norm"):
        part = _NORM_PARTS[part]
    path = path.replace("attention.output", "attention.attention_output").replace("mlp.", "")
    return f"{path.replace('.', '/')}/{part}"


def _variables(model) -> dict[str, object]:
    """Neutral name -> Keras variable."""
    by_path = {v.path.split("/", 1)[1]: v for v in model.variables}
    shapes = model.spec.parameter_shapes  # the model's own sizes (tiny or standard)
    missing = [name for name in shapes if keras_path(name) not in by_path]
    if missing or len(by_path) != len(shapes):
        raise RuntimeError(
            f"Keras model variables {sorted(by_path)} do not map onto the neutral names (unmapped: {missing})"
        )
    return {name: by_path[keras_path(name)] for name in shapes}


def load_neutral(model: EncoderSmall, weights: dict[str, np.ndarray]) -> None:
    check_weights(weights, model.spec.parameter_shapes, f"{model.spec.task_id}/tensorflow load")
    for name, variable in _variables(model).items():
        variable.assign(np.asarray(weights[name], np.float32).reshape(variable.shape))


def export_neutral(model: EncoderSmall) -> dict[str, np.ndarray]:
    return {
        name: np.ascontiguousarray(np.asarray(variable.numpy(), np.float32).reshape(model.spec.parameter_shapes[name]))
        for name, variable in _variables(model).items()
    }
