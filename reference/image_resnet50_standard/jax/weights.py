"""Neutral weights <-> Flax variables {"params", "batch_stats"} of ResNet50: fmnist-resnet's mapping, any ResNetSpec.

    from levelfield.reference.image_resnet50_standard.jax.weights import to_variables, to_neutral
    variables = to_variables(init_weights(0), SPEC)
    neutral = to_neutral(variables, SPEC)

Flax's layouts are the neutral ones and the submodules carry the neutral names,
so a neutral name is a path in "params" or, for BN's mean / var, "batch_stats"
(reference/fmnist_resnet/jax/weights.py has the table).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from levelfield.reference.fmnist_resnet.jax.weights import collection
from levelfield.reference.image_resnet50_standard.common.model_spec import ResNetSpec
from levelfield.reference.weights import check_weights


def to_variables(weights: dict[str, np.ndarray], spec: ResNetSpec, device: jax.Device | None = None) -> dict:
    """Neutral weights -> {"params": nested dict, "batch_stats": nested dict} of jax arrays on `device`."""
    check_weights(weights, spec.parameter_shapes, "image-resnet50-standard/jax load")
    variables = {"params": {}, "batch_stats": {}}
    for name in spec.parameter_shapes:
        node = variables[collection(name)]
        *path, leaf = name.split(".")
        for key in path:
            node = node.setdefault(key, {})
        node[leaf] = jax.device_put(jnp.asarray(weights[name], jnp.float32), device)
    return variables


def to_neutral(variables: dict, spec: ResNetSpec) -> dict[str, np.ndarray]:
    host = jax.device_get(variables)
    out = {}
    for name in spec.parameter_shapes:
        node = host[collection(name)]
        for key in name.split("."):
            node = node[key]
        out[name] = np.array(node, dtype=np.float32)
    return out
