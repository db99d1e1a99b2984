"""fmnist-resnet in ONNX Runtime: the ONNX graph of model.py in an InferenceSession; inference only.

    from levelfield.reference.fmnist_resnet.onnxruntime.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": no graph optimisation
    impl.load(weights)                                      # neutral weights -> model file (cached) -> session
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 10]

The graph is built once per instance without weights (`_build_model`); each
`load` binds the neutral weights as initializers (weights.py), writes or finds
the model file in the cache (reference/frameworks/onnxruntime/model_file.py)
and opens a session over it (session.py: the device's execution provider,
threads, the compile mode's optimisation level). Nothing of PyTorch,
TensorFlow or JAX is imported. predict runs the rows in chunks of at most
MAX_PREDICT_BATCH at their exact size: a session takes any batch, so no
padding to a compiled shape is needed.

Training stays with the training frameworks: set_train_data and train_steps
refuse (the trainer refuses `train --framework onnxruntime` before that).
image-resnet50-standard subclasses this class through `_build_model`.
"""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime as ort

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.common.inputs import predict_chunks
from levelfield.reference.fmnist_resnet.common.model_spec import PARAMETER_SHAPES
from levelfield.reference.fmnist_resnet.onnxruntime.model import build_graph
from levelfield.reference.fmnist_resnet.onnxruntime.weights import to_initializers, to_neutral
from levelfield.reference.frameworks.onnxruntime.graph import Graph
from levelfield.reference.frameworks.onnxruntime.model_file import model_file
from levelfield.reference.frameworks.onnxruntime.session import (
    INFERENCE_ONLY,
    determinism_settings,
    new_session,
    ort_device,
)


class Implementation(interface.Implementation):
    task_id = "fmnist-resnet"
    framework = "onnxruntime"
    parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES  # image-resnet50-standard: its spec's

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.device = ort_device(device)
        self.graph = self._build_model(recipe)  # the network without its weights
        self.initializers = None  # {name: array} in ONNX's layouts, from load()
        self.served = None  # the model file the session serves (model_file.ModelFile)
        self.session = None
        self._forward = None  # the session's run of one chunk, from load()

    def _build_model(self, recipe: interface.Recipe) -> Graph:
        """The ONNX graph, weights declared by name; image-resnet50-standard: ResNet-50's."""
        return build_graph()

    def version(self) -> str:
        return ort.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device, self.session)

    def served_graph(self) -> dict | None:
        """The model file's identity for result.json (None before load)."""
        return None if self.served is None else self.served.as_record()

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.initializers = to_initializers(weights, self.parameter_shapes, self.task_id)
        self.served = model_file(self.graph, self.initializers)
        self.session = new_session(self.served.model_path, self.mode, self.device)
        self._forward = functools.partial(self.session.run, ["logits"])

    def export(self) -> dict[str, np.ndarray]:
        if self.initializers is None:
            raise RuntimeError("load() must be called before export()")
        return to_neutral(self.initializers)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 10] with running BN statistics, for any N >= 1."""
        if self._forward is None:
            raise RuntimeError("load() must be called before predict()")
        images = inputs["images"]
        chunks = [
            self._forward({"images": np.ascontiguousarray(images[start:stop], np.float32)})[0]
            for start, stop, _ in predict_chunks(len(images))
        ]
        return np.concatenate(chunks)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        raise NotImplementedError(INFERENCE_ONLY)

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        raise NotImplementedError(INFERENCE_ONLY)
