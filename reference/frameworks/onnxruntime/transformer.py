"""The pre-norm transformer encoder family as an ONNX graph: seq-transformer's encoder at any TransformerSpec.

    from levelfield.reference.frameworks.onnxruntime import transformer
    hidden = transformer.encoder(g, tokens, spec, ln_eps=1e-5)     # [B, L, d], after the final LayerNorm

The same math as torch's nn.TransformerEncoderLayer with norm_first=True
(reference/seq_transformer/pytorch/model.py) and the Flax and Keras models:
token embedding + learned position embedding (positions 0..L-1, so the input
has the spec's length L); per layer x = x + MHA(LN(x)), x = x + FF(LN(x)),
LayerNorm with the spec's epsilon over the last axis (biased variance); the
attention with separate q/k/v/output projections with bias, heads split as the
neutral layout says (output feature f of q/k/v is head f // head_dim,
dimension f % head_dim: a row-major reshape [B, L, heads, head_dim]), scores
q k^T scaled by 1 / sqrt(head_dim), a softmax over the keys, no mask (the task
attends over every position of a sequence, padding rows never meet other rows);
the feed-forward's exact GELU (the erf form, ONNX's Gelu with approximate
"none", as torch's F.gelu); a final LayerNorm.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from levelfield.reference.frameworks.onnxruntime.graph import Graph, dense, layer_norm

if TYPE_CHECKING:
    from levelfield.reference.seq_transformer.common.model_spec import TransformerSpec


def _heads(g: Graph, x: str, spec: TransformerSpec, order: list[int]) -> str:
    """[B, L, d] -> [B, L, heads, head_dim], transposed by `order` (q, v: [B, h, L, dh]; k: [B, h, dh, L])."""
    split = g.op("Reshape", x, g.const(np.array([0, 0, spec.num_heads, spec.head_dim], np.int64), "heads_shape"))
    return g.op("Transpose", split, perm=order)


def attention(g: Graph, x: str, prefix: str, spec: TransformerSpec) -> str:
    """Multi-head self-attention of x [B, L, d] -> [B, L, d] (output projection included)."""
    d = spec.d_model
    q = _heads(g, dense(g, x, f"{prefix}.query", d, d), spec, [0, 2, 1, 3])  # [B, h, L, dh]
    k = _heads(g, dense(g, x, f"{prefix}.key", d, d), spec, [0, 2, 3, 1])  # [B, h, dh, L]
    v = _heads(g, dense(g, x, f"{prefix}.value", d, d), spec, [0, 2, 1, 3])  # [B, h, L, dh]
    scale = g.const(np.array(1.0 / math.sqrt(spec.head_dim), np.float32), "attention_scale")
    scores = g.op("Mul", g.op("MatMul", q, k), scale)  # [B, h, L, L]
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)  # [B, h, L, dh]
    merged = g.op("Transpose", context, perm=[0, 2, 1, 3])  # [B, L, h, dh]
    merged = g.op("Reshape", merged, g.const(np.array([0, 0, d], np.int64), "merge_shape"))  # [B, L, d]
    return dense(g, merged, f"{prefix}.output", d, d)


def feed_forward(g: Graph, x: str, prefix: str, spec: TransformerSpec) -> str:
    """dense d -> ff, exact GELU, dense ff -> d."""
    hidden = g.op("Gelu", dense(g, x, f"{prefix}.dense1", spec.d_model, spec.ff_dim), approximate="none")
    return dense(g, hidden, f"{prefix}.dense2", spec.ff_dim, spec.d_model)


def encoder(g: Graph, tokens: str, spec: TransformerSpec, ln_eps: float) -> str:
    """tokens int32 [B, L] -> the final LayerNorm's output [B, L, d]."""
    d = spec.d_model
    x = g.op("Gather", g.param("token_embedding.embedding", (spec.vocab_size, d)), tokens, axis=0)  # [B, L, d]
    x = g.op("Add", x, g.param("position_embedding.embedding", (spec.seq_len, d)))  # broadcast over B
    for i in range(spec.num_layers):
        layer = f"layer{i}"
        x = g.op(
            "Add", x, attention(g, layer_norm(g, x, f"{layer}.attention_norm", d, ln_eps), f"{layer}.attention", spec)
        )
        x = g.op("Add", x, feed_forward(g, layer_norm(g, x, f"{layer}.mlp_norm", d, ln_eps), f"{layer}.mlp", spec))
    return layer_norm(g, x, "final_norm", d, ln_eps)
