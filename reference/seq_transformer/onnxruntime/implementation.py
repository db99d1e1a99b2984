"""seq-transformer in ONNX Runtime: the encoder's ONNX graph (model.py) in an InferenceSession; inference only.

    impl = Implementation(Recipe.from_task(task))           # mode="eager": no graph optimisation
    impl.load(init_weights(0))
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 12, 10]

As fmnist-resnet's ONNX Runtime implementation (reference/fmnist_resnet/
onnxruntime/implementation.py says how load builds, caches and serves the
model file): the graph is built once per instance at the class's `spec`,
predict runs chunks of at most `max_predict_batch` rows at their exact size.
seq-transformer-standard subclasses it with its spec, smaller chunks and
predict answering the argmax token ids (computed in the graph).
"""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime as ort

from levelfield.reference import interface
from levelfield.reference.frameworks.onnxruntime.graph import Graph
from levelfield.reference.frameworks.onnxruntime.model_file import model_file
from levelfield.reference.frameworks.onnxruntime.session import (
    INFERENCE_ONLY,
    determinism_settings,
    new_session,
    ort_device,
)
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.inputs import MAX_PREDICT_BATCH, predict_chunks
from levelfield.reference.seq_transformer.onnxruntime.model import OUTPUT, build_graph
from levelfield.reference.seq_transformer.onnxruntime.weights import to_initializers, to_neutral


class Implementation(interface.Implementation):
    task_id = "seq-transformer"
    framework = "onnxruntime"
    spec: model_spec.TransformerSpec = model_spec.SPEC  # the sizes (seq-transformer-standard: its own)
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = False  # seq-transformer-standard: token ids int32 [N, L] instead of logits

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.device = ort_device(device)
        self.graph = self._build_model(recipe)  # the network without its weights
        self.initializers = None  # {name: array}, from load()
        self.served = None  # the model file the session serves (model_file.ModelFile)
        self.session = None
        self._forward = None  # the session's run of one chunk, from load()

    def _build_model(self, recipe: interface.Recipe) -> Graph:
        """The encoder's ONNX graph at this task's spec, ending in the argmax where predict answers token ids."""
        return build_graph(self.spec, self.predict_argmax)

    def version(self) -> str:
        return ort.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device, self.session)

    def served_graph(self) -> dict | None:
        """The model file's identity for result.json (None before load)."""
        return None if self.served is None else self.served.as_record()

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.initializers = to_initializers(weights, self.spec.parameter_shapes, self.task_id)
        self.served = model_file(self.graph, self.initializers)
        self.session = new_session(self.served.model_path, self.mode, self.device)
        self._forward = functools.partial(self.session.run, [OUTPUT])

    def export(self) -> dict[str, np.ndarray]:
        if self.initializers is None:
            raise RuntimeError("load() must be called before export()")
        return to_neutral(self.initializers)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, L, classes] (or token ids int32 [N, L], predict_argmax) for any N >= 1."""
        if self._forward is None:
            raise RuntimeError("load() must be called before predict()")
        tokens = inputs["tokens"]
        chunks = [
            self._forward({"tokens": np.ascontiguousarray(tokens[start:stop], np.int32)})[0]
            for start, stop, _ in predict_chunks(len(tokens), self.max_predict_batch)
        ]
        return np.concatenate(chunks)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        raise NotImplementedError(INFERENCE_ONLY)

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        raise NotImplementedError(INFERENCE_ONLY)
