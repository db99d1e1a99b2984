"""Neutral weights in and out of a torch model's state_dict, by a task's name map: what every mapping shares.

    load_state(model, weights, torch_key, to_torch)                 # reference/<task>/pytorch/weights.py
    neutral = export_state(model, names, torch_key, to_neutral)

A task's weights.py says where each neutral name lives (`key(name)`: the
state_dict key) and how its layout changes (`convert(name, value)`: e.g. HWIO
-> OIHW); the copying is the same for all: values copied into the model's own
tensors on their device, without gradient, and read back as contiguous float32
numpy arrays in the order of `names`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch

Convert = Callable[[str, np.ndarray], np.ndarray]


def load_state(
    model: torch.nn.Module, weights: dict[str, np.ndarray], key: Callable[[str], str], convert: Convert
) -> None:
    """Copy every neutral array into the model's state_dict tensor `key(name)`, as `convert` lays it out."""
    state = model.state_dict()
    with torch.no_grad():
        for name, value in weights.items():
            target = state[key(name)]
            target.copy_(torch.from_numpy(np.ascontiguousarray(convert(name, value))).to(target.device))


def export_state(
    model: torch.nn.Module, names: Iterable[str], key: Callable[[str], str], convert: Convert
) -> dict[str, np.ndarray]:
    """The neutral float32 arrays `names`, read from the model's state_dict and laid out by `convert`."""
    state = model.state_dict()
    return {
        name: np.ascontiguousarray(convert(name, state[key(name)].detach().cpu().numpy()), dtype=np.float32)
        for name in names
    }
