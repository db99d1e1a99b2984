"""Neutral weights <-> Flax variables {"params": ..., "batch_stats": ...} of ResNetSmall, or of another ResNet.

    from levelfield.reference.fmnist_resnet.jax.weights import to_variables, to_neutral
    variables = to_variables(init_weights(0))
    neutral = to_neutral(variables)
    variables = to_variables(weights, device, SPEC.parameter_shapes, "image-resnet50-standard")   # ResNet-50's

Flax's layouts already are the neutral ones (Conv kernel HWIO, Dense kernel
[in, out]) and the submodules carry the neutral names, so a neutral name is
a path in one of two collections:

| neutral name                     | Flax variable                                   |
| -------------------------------- | ----------------------------------------------- |
| stem.conv.kernel                 | params/stem/conv/kernel                         |
| stem.bn.{scale,bias}             | params/stem/bn/{scale,bias}                     |
| stem.bn.{mean,var}               | batch_stats/stem/bn/{mean,var}                  |
| blockK.{conv1,conv2,proj}.kernel | params/blockK/{conv1,conv2,proj}/kernel         |
| blockK.{bn1,bn2,proj_bn}.*       | params or batch_stats /blockK/{bn1,...}/*       |
| head.kernel / head.bias          | params/head/kernel, params/head/bias            |

ResNet-50's blocks (stage{s}_block{b}.*) are paths in the same two collections.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from levelfield.reference.fmnist_resnet.common.model_spec import BN_BUFFERS, PARAMETER_SHAPES
from levelfield.reference.weights import check_weights


def collection(name: str) -> str:
    return "batch_stats" if name.rsplit(".", 1)[1] in BN_BUFFERS else "params"


def to_variables(
    weights: dict[str, np.ndarray],
    device: jax.Device | None = None,
    parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES,
    task_id: str = "fmnist-resnet",
) -> dict:
    """Neutral weights -> {"params": nested dict, "batch_stats": nested dict} of jax arrays on `device`."""
    check_weights(weights, parameter_shapes, f"{task_id}/jax load")
    variables = {"params": {}, "batch_stats": {}}
    for name in parameter_shapes:
        node = variables[collection(name)]
        *path, leaf = name.split(".")
        for key in path:
            node = node.setdefault(key, {})
        node[leaf] = jax.device_put(jnp.asarray(weights[name], jnp.float32), device)
    return variables


def to_neutral(variables: dict, parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES) -> dict[str, np.ndarray]:
    host = jax.device_get(variables)
    out = {}
    for name in parameter_shapes:
        node = host[collection(name)]
        for key in name.split("."):
            node = node[key]
        out[name] = np.array(node, dtype=np.float32)
    return out
