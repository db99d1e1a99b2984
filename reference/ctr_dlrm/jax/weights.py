"""Neutral weights <-> the Flax DLRMSmall's params tree.

    from levelfield.reference.ctr_dlrm.jax.weights import to_params, to_neutral
    params = to_params(init_weights(0))      # {"embedding0": {"embedding": ...}, "bottom_dense0": {...}, ...}
    params = to_params(weights, shapes=spec)  # another DLRMSpec's network (default: ctr-dlrm's)
    neutral = to_neutral(params)

| neutral name                     | Flax params path                       | layout change |
| -------------------------------- | -------------------------------------- | ------------- |
| embedding{f}.table [rows, 16]    | embedding{f} / embedding [rows, 16]    | none          |
| bottom.dense{i}.kernel [in, out] | bottom_dense{i} / kernel [in, out]     | none          |
| bottom.dense{i}.bias [out]       | bottom_dense{i} / bias                 | none          |
| top.dense{i}.kernel [in, out]    | top_dense{i} / kernel [in, out]        | none          |
| top.dense{i}.bias [out]          | top_dense{i} / bias                    | none          |

Flax already stores dense kernels as [in, out] and embeddings as [rows, dim],
so the mapping is names only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from levelfield.reference.ctr_dlrm.common.model_spec import SPEC, DLRMSpec
from levelfield.reference.ctr_dlrm.jax.model import module_name
from levelfield.reference.weights import check_weights

_PARTS = {"table": "embedding", "kernel": "kernel", "bias": "bias"}


def params_path(name: str) -> tuple[str, str]:
    """(module, parameter) of neutral weight `name` in the params tree."""
    prefix, part = name.rsplit(".", 1)
    return module_name(prefix), _PARTS[part]


def to_params(weights: dict[str, np.ndarray], device: jax.Device | None = None, shapes: DLRMSpec = SPEC) -> dict:
    """The params tree (jax arrays, on `device` if given) for neutral weights of the network `shapes`."""
    check_weights(weights, shapes.parameter_shapes, f"{shapes.task_id}/jax load")
    params: dict = {}
    for name, value in weights.items():
        module, part = params_path(name)
        params.setdefault(module, {})[part] = jax.device_put(jnp.asarray(value, jnp.float32), device)
    return params


def to_neutral(params: dict, shapes: DLRMSpec = SPEC) -> dict[str, np.ndarray]:
    out = {}
    for name in shapes.parameter_shapes:
        module, part = params_path(name)
        out[name] = np.array(params[module][part], dtype=np.float32)
    return out
