"""Neutral weights <-> the Flax EncoderSmall's `params` tree.

    from levelfield.reference.seq_transformer.jax.weights import to_params, to_neutral
    params = to_params(init_weights(0))          # nested dict of jnp float32 arrays
    neutral = to_neutral(params)

Flax paths are "/"-joined keys of the params tree; K is 0 or 1.

| neutral name                           | Flax params path                          | layout change        |
| -------------------------------------- | ----------------------------------------- | -------------------- |
| token_embedding.embedding [10,64]      | token_embedding/embedding                 | none                 |
| position_embedding.embedding [12,64]   | position_embedding/embedding              | none                 |
| layerK.attention_norm.{scale,bias}     | layerK/attention_norm/{scale,bias}        | none                 |
| layerK.attention.QKV.kernel [64,64]    | layerK/attention/QKV/kernel [64,4,16]     | reshape (head-major) |
| layerK.attention.QKV.bias [64]         | layerK/attention/QKV/bias [4,16]          | reshape              |
| layerK.attention.output.kernel [64,64] | layerK/attention/out/kernel [4,16,64]     | reshape              |
| layerK.attention.output.bias [64]      | layerK/attention/out/bias                 | none                 |
| layerK.mlp_norm.{scale,bias}           | layerK/mlp_norm/{scale,bias}              | none                 |
| layerK.mlp.dense{1,2}.{kernel,bias}    | layerK/dense{1,2}/{kernel,bias}           | none ([in, out])     |
| final_norm.{scale,bias}                | final_norm/{scale,bias}                   | none                 |
| head.{kernel,bias}                     | head/{kernel,bias}                        | none                 |

QKV stands for each of query, key, value. Every change is a row-major
reshape, so export reshapes back to the neutral shape.
"""

from __future__ import annotations

import jax
import numpy as np
from flax.traverse_util import flatten_dict, unflatten_dict

from levelfield.reference.seq_transformer.common import model_spec as spec
from levelfield.reference.weights import check_weights


def flax_path(name: str) -> tuple[str, ...]:
    """The params-tree key path of one neutral name."""
    return tuple(name.replace("attention.output", "attention.out").replace("mlp.", "").split("."))


def flax_shape(name: str, shapes: spec.TransformerSpec = spec.SPEC) -> tuple[int, ...]:
    """Flax's shape of one neutral name: attention projections keep the heads as their own axis."""
    shape = shapes.parameter_shapes[name]
    heads = (shapes.num_heads, shapes.head_dim)
    if ".attention." in name:
        proj, part = name.rsplit(".", 2)[1:]
        if proj == "output":
            return heads + shape[1:] if part == "kernel" else shape  # [4, 16, 64] / [64]
        return shape[:1] + heads if part == "kernel" else heads  # [64, 4, 16] / [4, 16]
    return shape


def to_params(
    weights: dict[str, np.ndarray], device: jax.Device | None = None, shapes: spec.TransformerSpec = spec.SPEC
) -> dict:
    check_weights(weights, shapes.parameter_shapes, f"{shapes.task_id}/jax load")
    flat = {
        flax_path(name): jax.device_put(np.asarray(value, np.float32).reshape(flax_shape(name, shapes)), device)
        for name, value in weights.items()
    }
    return unflatten_dict(flat)


def to_neutral(params: dict, shapes: spec.TransformerSpec = spec.SPEC) -> dict[str, np.ndarray]:
    flat = flatten_dict(jax.device_get(params))
    if set(flat) != {flax_path(name) for name in shapes.parameter_shapes}:
        raise RuntimeError(f"Flax params {sorted(flat)} do not map onto the neutral names")
    return {
        name: np.ascontiguousarray(np.asarray(flat[flax_path(name)], np.float32).reshape(shapes.parameter_shapes[name]))
        for name in shapes.parameter_shapes
    }
