"""dlrm-small as a Flax linen module (architecture: ctr_dlrm/common/model_spec.py).

    model = DLRMSmall()
    params = model.init(jax.random.key(0), dense, sparse)["params"]   # replaced by neutral weights in practice
    logits = model.apply({"params": params}, dense, sparse)           # float32 [B, 13], int32 [B, 8] -> [B]

Submodule names are the neutral prefixes with dots replaced by underscores
(`bottom.dense0` -> `bottom_dense0`), so jax/weights.py maps them by name.

Mixed precision (bf16: ctr-dlrm-standard's inference, rules 1.2) is Flax's
dtype policy: every module computes in `dtype` (lookups, dots and dense layers
in bfloat16), parameters stay float32; the logit is cast to float32.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax.numpy as jnp

from levelfield.reference.ctr_dlrm.common import model_spec as spec


def module_name(neutral_prefix: str) -> str:
    return neutral_prefix.replace(".", "_")


class DLRMSmall(nn.Module):
    shapes: spec.DLRMSpec = spec.SPEC  # ctr-dlrm's; DLRMSmall(shapes=...) for another DLRMSpec
    dtype: Any = jnp.float32  # the computation's (jnp.bfloat16: precision bf16); parameters are float32

    @nn.compact
    def __call__(self, dense, sparse):
        shapes, dtype = self.shapes, self.dtype
        x = dense  # [B, 13]
        for name, _, fan_out in shapes.bottom_layers:  # ReLU after every layer
            x = nn.relu(nn.Dense(fan_out, dtype=dtype, name=module_name(name))(x))  # -> [B, 16]
        vectors = [x] + [
            nn.Embed(rows, shapes.embedding_dim, dtype=dtype, name=f"embedding{f}")(sparse[:, f])
            for f, rows in enumerate(shapes.cardinalities)
        ]
        t = jnp.stack(vectors, axis=1)  # [B, 9, 16]
        z = jnp.einsum("bid,bjd->bij", t, t)  # [B, 9, 9]
        dots = z.reshape(z.shape[0], -1)[:, shapes.interaction_flat_index]  # [B, 36]
        y = jnp.concatenate([x, dots], axis=1)  # [B, 52]
        for i, (name, _, fan_out) in enumerate(shapes.top_layers):  # no ReLU on the logit
            y = nn.Dense(fan_out, dtype=dtype, name=module_name(name))(y)
            if i < len(shapes.top_layers) - 1:
                y = nn.relu(y)
        return jnp.asarray(y[:, 0], jnp.float32)  # [B]
