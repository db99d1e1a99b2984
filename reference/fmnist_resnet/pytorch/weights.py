"""Neutral weights <-> ResNetSmall state_dict; image-resnet50-standard's ResNet-50 maps the same way.

    from levelfield.reference.fmnist_resnet.pytorch.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)
    load_neutral(resnet50, weights, SPEC.parameter_shapes, "image-resnet50-standard")   # another ResNet's names

| neutral name                      | torch state_dict key                  | layout change            |
| --------------------------------- | ------------------------------------- | ------------------------ |
| stem.conv.kernel [3,3,1,16]       | conv.weight [16,1,3,3]                | HWIO -> OIHW             |
| stem.bn.{scale,bias,mean,var}     | bn.{weight,bias,running_mean,running_var} | none                 |
| blockK.conv1.kernel               | blocks.blockK.conv1.weight            | HWIO -> OIHW             |
| blockK.bn1.{...}                  | blocks.blockK.bn1.{...}               | as stem.bn               |
| blockK.conv2.kernel / bn2         | blocks.blockK.conv2.weight / bn2      | as conv1 / bn1           |
| blockK.proj.kernel [1,1,in,out]   | blocks.blockK.proj.weight [out,in,1,1]| HWIO -> OIHW             |
| blockK.proj_bn.{...}              | blocks.blockK.proj_bn.{...}           | as stem.bn               |
| head.kernel [64,10]               | head.weight [10,64]                   | transpose                |
| head.bias [10]                    | head.bias [10]                        | none                     |

ResNet-50's blocks (stage{s}_block{b}.*, with conv3 / bn3) sit under `blocks.`
as fmnist-resnet's blockK do; the stem, the head and the layouts are the same.
BN's `num_batches_tracked` is not exported: with a fixed momentum it is unused.
"""

from __future__ import annotations

import numpy as np
import torch

from levelfield.reference.fmnist_resnet.common.model_spec import PARAMETER_SHAPES
from levelfield.reference.frameworks.pytorch.weights import export_state, load_state
from levelfield.reference.weights import check_weights

_BN_PARTS = {"scale": "weight", "bias": "bias", "mean": "running_mean", "var": "running_var"}


def torch_key(name: str) -> str:
    """The state_dict key of one neutral name: stem.* on the model itself, head.* as is, every block (blockK,
    stage{s}_block{b}) under blocks."""
    path, part = name.rsplit(".", 1)
    if path.startswith("stem."):
        module = path[len("stem.") :]
    else:
        module = path if path == "head" else "blocks." + path
    if part == "kernel":
        return f"{module}.weight"
    if module == "head":
        return f"head.{part}"
    return f"{module}.{_BN_PARTS[part]}"


def to_torch(name: str, value: np.ndarray) -> np.ndarray:
    if value.ndim == 4:  # HWIO -> OIHW
        return value.transpose(3, 2, 0, 1)
    if name == "head.kernel":  # [in, out] -> [out, in]
        return value.T
    return value


def to_neutral(name: str, value: np.ndarray) -> np.ndarray:
    if value.ndim == 4:  # OIHW -> HWIO
        return value.transpose(2, 3, 1, 0)
    if name == "head.kernel":
        return value.T
    return value


def load_neutral(
    model: torch.nn.Module,
    weights: dict[str, np.ndarray],
    parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES,
    task_id: str = "fmnist-resnet",
) -> None:
    """Set the model's parameters and BN statistics from neutral weights of the network `parameter_shapes`."""
    check_weights(weights, parameter_shapes, f"{task_id}/pytorch load")
    load_state(model, weights, torch_key, to_torch)


def export_neutral(
    model: torch.nn.Module, parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES
) -> dict[str, np.ndarray]:
    return export_state(model, parameter_shapes, torch_key, to_neutral)
