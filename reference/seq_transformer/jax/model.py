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

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm(epsilon=spec.LN_EPS, name="attention_norm")(x)
        x = x + nn.MultiHeadDotProductAttention(
            num_heads=spec.NUM_HEADS,
            qkv_features=spec.D_MODEL,
            out_features=spec.D_MODEL,
            dropout_rate=0.0,
            deterministic=True,
            use_bias=True,
            name="attention",
        )(h)  # self-attention
        h = nn.LayerNorm(epsilon=spec.LN_EPS, name="mlp_norm")(x)
        h = nn.Dense(spec.FF_DIM, name="dense1")(h)  # [B, 12, 128]
        h = nn.gelu(h, approximate=False)
        return x + nn.Dense(spec.D_MODEL, name="dense2")(h)


class EncoderSmall(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(spec.VOCAB_SIZE, spec.D_MODEL, name="token_embedding")(tokens)  # [B, 12, 64]
        positions = nn.Embed(spec.SEQ_LEN, spec.D_MODEL, name="position_embedding")(jnp.arange(spec.SEQ_LEN))
        x = x + positions[None]
        for i in range(spec.NUM_LAYERS):
            x = EncoderLayer(name=f"layer{i}")(x)
        x = nn.LayerNorm(epsilon=spec.LN_EPS, name="final_norm")(x)
        return nn.Dense(spec.NUM_CLASSES, name="head")(x)  # [B, 12, 10]
