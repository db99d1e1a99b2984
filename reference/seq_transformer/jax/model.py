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
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import linen as nn

from levelfield.reference.seq_transformer.common import model_spec as spec


class EncoderLayer(nn.Module):
    """x = x + MHA(LN(x)); x = x + FF(LN(x)) on [B, 12, 64]."""

    shapes: spec.TransformerSpec = spec.SPEC

    @nn.compact
    def __call__(self, x):
        shapes = self.shapes
        h = nn.LayerNorm(epsilon=spec.LN_EPS, name="attention_norm")(x)
        x = x + nn.MultiHeadDotProductAttention(
            num_heads=shapes.num_heads,
            qkv_features=shapes.d_model,
            out_features=shapes.d_model,
            dropout_rate=0.0,
            deterministic=True,
            use_bias=True,
            name="attention",
        )(h)  # self-attention
        h = nn.LayerNorm(epsilon=spec.LN_EPS, name="mlp_norm")(x)
        h = nn.Dense(shapes.ff_dim, name="dense1")(h)  # [B, 12, 128]
        h = nn.gelu(h, approximate=False)
        return x + nn.Dense(shapes.d_model, name="dense2")(h)


class EncoderSmall(nn.Module):
    shapes: spec.TransformerSpec = spec.SPEC  # the sizes (seq-transformer-standard passes its own)

    @nn.compact
    def __call__(self, tokens):
        shapes = self.shapes
        x = nn.Embed(shapes.vocab_size, shapes.d_model, name="token_embedding")(tokens)  # [B, 12, 64]
        positions = nn.Embed(shapes.seq_len, shapes.d_model, name="position_embedding")(jnp.arange(shapes.seq_len))
        x = x + positions[None]
        for i in range(shapes.num_layers):
            x = EncoderLayer(shapes, name=f"layer{i}")(x)
        x = nn.LayerNorm(epsilon=spec.LN_EPS, name="final_norm")(x)
        return nn.Dense(shapes.num_classes, name="head")(x)  # [B, 12, 10]
