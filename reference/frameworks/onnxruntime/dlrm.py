"""The DLRM family as an ONNX graph: ctr-dlrm's network at any DLRMSpec (MLPerf's DLRM at the standard size).

    from levelfield.reference.frameworks.onnxruntime import dlrm
    logits = dlrm.network(g, dense, sparse, spec)       # float32 [B, 13], int32 [B, 8] -> float32 [B]

The same math as reference/ctr_dlrm/pytorch/model.py (facebookresearch's DLRM
with the "dot" interaction): the bottom MLP with a ReLU after every layer;
one row per field looked up in that field's table; T = [x, e_0, ..., e_{F-1}]
stacked [B, V, D]; Z = T T^T [B, V, V]; the pairs i < j in row-major order over
the upper triangle (spec.interaction_pairs: (0,1), (0,2), ..., (V-2, V-1)),
gathered from Z flattened [B, V*V] at spec.interaction_flat_index; the top MLP
over [x, dots] with a ReLU after every layer but the last, whose one output is
the logit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from levelfield.reference.frameworks.onnxruntime.graph import Graph, dense

if TYPE_CHECKING:
    from levelfield.reference.ctr_dlrm.common.model_spec import DLRMSpec


def mlp(g: Graph, x: str, layers: list[tuple[str, int, int]], relu_last: bool) -> str:
    """Dense (+ReLU) layers from model_spec's (name, in, out) list; ReLU after the last only if relu_last."""
    for i, (name, fan_in, fan_out) in enumerate(layers):
        x = dense(g, x, name, fan_in, fan_out)
        if relu_last or i < len(layers) - 1:
            x = g.op("Relu", x)
    return x


def network(g: Graph, dense_in: str, sparse_in: str, spec: DLRMSpec) -> str:
    """dense float32 [B, F_dense], sparse int32 [B, fields] -> logits float32 [B]."""
    x = mlp(g, dense_in, spec.bottom_layers, relu_last=True)  # [B, D]
    axis1 = g.const(np.array([1], np.int64), "axis1")
    vectors = [g.op("Unsqueeze", x, axis1)]  # [B, 1, D]
    for f, rows in enumerate(spec.cardinalities):
        ids = g.op("Gather", sparse_in, g.const(np.array(f, np.int64), "field"), axis=1)  # [B]
        row = g.op("Gather", g.param(f"embedding{f}.table", (rows, spec.embedding_dim)), ids, axis=0)  # [B, D]
        vectors.append(g.op("Unsqueeze", row, axis1))
    t = g.op("Concat", *vectors, axis=1)  # [B, V, D]
    z = g.op("MatMul", t, g.op("Transpose", t, perm=[0, 2, 1]))  # [B, V, V]
    flat = g.op("Reshape", z, g.const(np.array([0, spec.num_vectors**2], np.int64), "flat_shape"))  # [B, V*V]
    pairs = g.const(spec.interaction_flat_index.astype(np.int64), "pair_index")
    dots = g.op("Gather", flat, pairs, axis=1)  # [B, pairs]
    top = mlp(g, g.op("Concat", x, dots, axis=1), spec.top_layers, relu_last=False)  # [B, 1]
    return g.op("Squeeze", top, axis1)  # [B]
