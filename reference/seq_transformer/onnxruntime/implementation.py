"""seq-transformer in ONNX Runtime: the encoder's ONNX graph (model.py) in an InferenceSession; inference only.

    impl = Implementation(Recipe.from_task(task))           # mode="eager": no graph optimisation
    impl.load(init_weights(0))
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 12, 10]

The framework's base (reference/frameworks/onnxruntime/base.py) builds,
caches and serves the model file and refuses to train; this class gives the
graph at the class's `spec` and predict's input: chunks of at most
`max_predict_batch` rows at their exact size. seq-transformer-standard
subclasses it with its spec, smaller chunks and predict answering the argmax
token ids (computed in the graph).
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import interface
from levelfield.reference.frameworks.onnxruntime.base import FrameworkImplementation, run_chunks
from levelfield.reference.frameworks.onnxruntime.graph import Graph
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.inputs import MAX_PREDICT_BATCH, predict_chunks
from levelfield.reference.seq_transformer.onnxruntime import weights
from levelfield.reference.seq_transformer.onnxruntime.model import OUTPUT, build_graph


class Implementation(FrameworkImplementation):
    task_id = "seq-transformer"
    weight_mapping = weights  # the same names and layouts: checked, float32, contiguous
    output_name = OUTPUT  # logits, or the token ids where the graph ends in the argmax
    spec: model_spec.TransformerSpec = model_spec.SPEC  # the sizes (seq-transformer-standard: its own)
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = False  # seq-transformer-standard: token ids int32 [N, L] instead of logits

    def _build_model(self, recipe: interface.Recipe) -> Graph:
        """The encoder's ONNX graph at this task's spec, ending in the argmax where predict answers token ids."""
        return build_graph(self.spec, self.predict_argmax)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, L, classes] (or token ids int32 [N, L], predict_argmax) for any N >= 1."""
        tokens = inputs["tokens"]
        chunks = predict_chunks(len(tokens), self.max_predict_batch)
        return run_chunks(self._forward, {"tokens": (tokens, np.int32)}, chunks)
