"""Neutral weights <-> ResNet50's state_dict: fmnist-resnet's mapping, for any ResNetSpec.

    from levelfield.reference.image_resnet50_standard.pytorch.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

Names map as fmnist-resnet's (reference/fmnist_resnet/pytorch/weights.py has the
table: stem.* -> conv / bn, stage{s}_block{b}.* -> blocks.stage{s}_block{b}.*,
conv kernels HWIO -> OIHW, head kernel transposed); both functions check the
weights against the model's own spec (model.spec).
"""

from __future__ import annotations

import numpy as np
import torch

from levelfield.reference.fmnist_resnet.pytorch.weights import _BN_PARTS, to_neutral, to_torch
from levelfield.reference.weights import check_weights


def torch_key(name: str) -> str:
    """The state_dict key of one neutral name."""
    path, part = name.rsplit(".", 1)
    module = path[len("stem.") :] if path.startswith("stem.") else path
    if module.startswith("stage"):
        module = "blocks." + module
    if part == "kernel":
        return f"{module}.weight"
    if module == "head":
        return f"head.{part}"
    return f"{module}.{_BN_PARTS[part]}"


def load_neutral(model: torch.nn.Module, weights: dict[str, np.ndarray]) -> None:
    check_weights(weights, model.spec.parameter_shapes, "image-resnet50-standard/pytorch load")
    state = model.state_dict()
    with torch.no_grad():
        for name, value in weights.items():
            target = state[torch_key(name)]
            target.copy_(torch.from_numpy(np.ascontiguousarray(to_torch(name, value))).to(target.device))


def export_neutral(model: torch.nn.Module) -> dict[str, np.ndarray]:
    state = model.state_dict()
    return {
        name: np.ascontiguousarray(to_neutral(name, state[torch_key(name)].detach().cpu().numpy()), dtype=np.float32)
        for name in model.spec.parameter_shapes
    }
