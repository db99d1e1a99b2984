"""encoder-small (or any TransformerSpec's encoder) as an ONNX graph, written with onnx.helper.

    from levelfield.reference.seq_transformer.onnxruntime.model import build_graph
    graph = build_graph(SPEC)                     # tokens int32 [N, 12] -> logits float32 [N, 12, 10]
    graph = build_graph(SPEC, argmax=True)        # -> token ids int32 [N, L] (seq-transformer-standard)

The pre-norm encoder family's builder (reference/frameworks/onnxruntime/
transformer.py) at the spec's sizes and common/model_spec.py's LayerNorm
epsilon, then the per-position dense head. With `argmax` the graph ends in
the argmax over the classes, so a chunk's logits (0.5 GiB at BERT's
vocabulary) never leave the session.
"""

from __future__ import annotations

from levelfield.reference.frameworks.onnxruntime import transformer
from levelfield.reference.frameworks.onnxruntime.graph import BATCH, FLOAT, INT32, Graph, dense
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.model_spec import TransformerSpec

OUTPUT = "outputs"  # the graph's one output: logits, or token ids with argmax


def build_graph(spec: TransformerSpec = model_spec.SPEC, argmax: bool = False) -> Graph:
    """ "tokens" int32 [N, L] -> OUTPUT: logits float32 [N, L, classes], or with `argmax` their argmax int32 [N, L]."""
    g = Graph(f"{spec.task_id}-encoder")
    tokens = g.input("tokens", INT32, [BATCH, spec.seq_len])
    hidden = transformer.encoder(g, tokens, spec, model_spec.LN_EPS)  # [N, L, d]
    logits = dense(g, hidden, "head", spec.d_model, spec.num_classes)  # [N, L, classes]
    if argmax:
        ids = g.op("Cast", g.op("ArgMax", logits, axis=-1, keepdims=0), to=INT32)  # first maximum, as np.argmax
        g.output(ids, OUTPUT, INT32, [BATCH, spec.seq_len])
    else:
        g.output(logits, OUTPUT, FLOAT, [BATCH, spec.seq_len, spec.num_classes])
    return g
