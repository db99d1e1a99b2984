"""Neutral weights <-> DLRMSmall state_dict.

    from levelfield.reference.ctr_dlrm.pytorch.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

| neutral name                     | torch state_dict key           | layout change     |
| -------------------------------- | ------------------------------ | ----------------- |
| embedding{f}.table [rows, 16]    | embeddings.{f}.weight          | none              |
| bottom.dense{i}.kernel [in, out] | bottom_mlp.{2i}.weight [out,in]| transpose         |
| bottom.dense{i}.bias [out]       | bottom_mlp.{2i}.bias           | none              |
| top.dense{i}.kernel [in, out]    | top_mlp.{2i}.weight [out, in]  | transpose         |
| top.dense{i}.bias [out]          | top_mlp.{2i}.bias              | none              |

Sequential indices are 2i because a ReLU module sits between the Linear layers.
"""

from __future__ import annotations

import numpy as np
import torch

from levelfield.reference.frameworks.pytorch.weights import export_state, load_state
from levelfield.reference.weights import check_weights

_MLPS = {"bottom": "bottom_mlp", "top": "top_mlp"}


def torch_key(name: str) -> str:
    """The state_dict key of one neutral name."""
    path, part = name.rsplit(".", 1)
    if part == "table":
        return f"embeddings.{int(path[len('embedding') :])}.weight"
    mlp, layer = path.split(".")  # "bottom", "dense1"
    index = 2 * int(layer[len("dense") :])
    return f"{_MLPS[mlp]}.{index}.{'weight' if part == 'kernel' else 'bias'}"


def _convert(name: str, value: np.ndarray) -> np.ndarray:
    """[in, out] <-> [out, in] for dense kernels (its own inverse); everything else as is."""
    return value.T if name.endswith(".kernel") else value


def load_neutral(model: torch.nn.Module, weights: dict[str, np.ndarray]) -> None:
    check_weights(weights, model.spec.parameter_shapes, f"{model.spec.task_id}/pytorch load")
    load_state(model, weights, torch_key, _convert)


def export_neutral(model: torch.nn.Module) -> dict[str, np.ndarray]:
    return export_state(model, model.spec.parameter_shapes, torch_key, _convert)
