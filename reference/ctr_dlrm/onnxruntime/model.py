"""dlrm-small (or any DLRMSpec's DLRM) as an ONNX graph, written with onnx.helper.

    from levelfield.reference.ctr_dlrm.onnxruntime.model import build_graph
    graph = build_graph(SPEC)     # dense float32 [N, 13], sparse int32 [N, 8] -> logits float32 [N]

The DLRM family's builder (reference/frameworks/onnxruntime/dlrm.py) at the
spec's shapes: bottom MLP, one table lookup per field, the pairwise dots in
spec.interaction_pairs' order, top MLP to one logit per row.
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common import model_spec
from levelfield.reference.ctr_dlrm.common.model_spec import DLRMSpec
from levelfield.reference.frameworks.onnxruntime import dlrm
from levelfield.reference.frameworks.onnxruntime.graph import BATCH, FLOAT, INT32, Graph


def build_graph(spec: DLRMSpec = model_spec.SPEC) -> Graph:
    """ "dense" float32 [N, F], "sparse" int32 [N, fields] -> "logits" float32 [N]."""
    g = Graph(f"{spec.task_id}-dlrm")
    dense = g.input("dense", FLOAT, [BATCH, spec.dense_features])
    sparse = g.input("sparse", INT32, [BATCH, spec.num_fields])
    g.output(dlrm.network(g, dense, sparse, spec), "logits", FLOAT, [BATCH])
    return g
