"""encoder-small in Flax linen: embeddings, 2 pre-norm encoder layers, per-position head.

    model = EncoderSmall()
    params = model.init(jax.random.key(0), jnp.zeros((1, 12), jnp.int32))["params"]
    logits = model.apply({"params": params}, tokens)       # int32 [B, 12] -> float32 [B, 12, 10]

Like the Flax examples' transformer (examples/wmt, lm1b), written with
nn.MultiHeadDotProductAttention (q/k/v kernels [64, 4, 16], output kernel
[4, 16, 64], query scaled by 1/sqrt(16)). Two Flax defaults differ from the
rules and are overridden: LayerNorm epsilon (1e-6 -> 1e-5) and nn.gelu's tanh
approximation (approximate=False: the exact erf GELU). No dropout, no mask,
so the model is deterministic and needs no rng. Sizes come from
common/model_spec.py; weights come from the neutral init through weights.py,
so the Flax initialisers below only shape the parameter tree.

Mixed precision (bf16: seq-transformer-standard's inference, rules 1.2) is
Flax's dtype policy, as in the Flax examples' `half_precision`: every module
gets `dtype` (the computation's) while `param_dtype` stays float32; the
logits are cast to float32 at the end.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from levelfield.reference.seq_transformer.common import model_spec as spec


class EncoderLayer(nn.Module):
    """x = x + MHA(LN(x)); x = x + FF(LN(x)) on [B, 12, 64]."""

    shapes: spec.TransformerSpec = spec.SPEC
    dtype: Any = jnp.float32  # the computation's; parameters are float32 (param_dtype's default)

    @nn.compact
    def __call__(self, x):
        shapes = self.shapes
        h = nn.LayerNorm(epsilon=spec.LN_EPS, dtype=self.dtype, name="attention_norm")(x)
        x = x + nn.MultiHeadDotProductAttention(
            num_heads=shapes.num_heads,
            qkv_features=shapes.d_model,
            out_features=shapes.d_model,
            dropout_rate=0.0,
            deterministic=True,
            use_bias=True,
            dtype=self.dtype,
            name="attention",
        )(h)  # self-attention
        h = nn.LayerNorm(epsilon=spec.LN_EPS, dtype=self.dtype, name="mlp_norm")(x)
        h = nn.Dense(shapes.ff_dim, dtype=self.dtype, name="dense1")(h)  # [B, 12, 128]
        h = nn.gelu(h, approximate=False)
        return x + nn.Dense(shapes.d_model, dtype=self.dtype, name="dense2")(h)


class EncoderSmall(nn.Module):
    shapes: spec.TransformerSpec = spec.SPEC  # the sizes (seq-transformer-standard passes its own)
    dtype: Any = jnp.float32  # jnp.bfloat16: precision bf16

    @nn.compact
    def __call__(self, tokens):
        shapes, dtype = self.shapes, self.dtype
        x = nn.Embed(shapes.vocab_size, shapes.d_model, dtype=dtype, name="token_embedding")(tokens)  # [B, 12, 64]
        positions = nn.Embed(shapes.seq_len, shapes.d_model, dtype=dtype, name="position_embedding")(
            jnp.arange(shapes.seq_len)
        )
        x = x + positions[None]
        for i in range(shapes.num_layers):
            x = EncoderLayer(shapes, dtype, name=f"layer{i}")(x)
        x = nn.LayerNorm(epsilon=spec.LN_EPS, dtype=dtype, name="final_norm")(x)
        return jnp.asarray(nn.Dense(shapes.num_classes, dtype=dtype, name="head")(x), jnp.float32)  # [B, 12, 10]
