"""ctr-dlrm in ONNX Runtime: the DLRM's ONNX graph (model.py) in an InferenceSession; inference only.

    impl = Implementation(Recipe.from_task(task))          # mode="eager": no graph optimisation
    impl.load(init_weights(seed))
    logits = impl.predict(model_inputs(arrays, "eval"))    # float32 [N]

As fmnist-resnet's ONNX Runtime implementation (reference/fmnist_resnet/
onnxruntime/implementation.py says how load builds, caches and serves the
model file): the graph is built once per instance at the class's `spec`,
predict runs chunks of at most MAX_PREDICT_BATCH rows at their exact size.
ctr-dlrm-standard subclasses it with its spec.
"""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime as ort

from levelfield.reference import interface
from levelfield.reference.ctr_dlrm.common import model_spec
from levelfield.reference.ctr_dlrm.common.inputs import check_inputs, predict_chunks
from levelfield.reference.ctr_dlrm.onnxruntime.model import build_graph
from levelfield.reference.ctr_dlrm.onnxruntime.weights import to_initializers, to_neutral
from levelfield.reference.frameworks.onnxruntime.graph import Graph
from levelfield.reference.frameworks.onnxruntime.model_file import model_file
from levelfield.reference.frameworks.onnxruntime.session import (
    INFERENCE_ONLY,
    determinism_settings,
    new_session,
    ort_device,
)


class Implementation(interface.Implementation):
    task_id = "ctr-dlrm"
    framework = "onnxruntime"
    spec: model_spec.DLRMSpec = model_spec.SPEC  # the network's shapes (ctr-dlrm-standard: its own spec)

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.device = ort_device(device)
        self.graph = self._build_model(recipe)  # the network without its weights
        self.initializers = None  # {name: array}, from load()
        self.served = None  # the model file the session serves (model_file.ModelFile)
        self.session = None
        self._forward = None  # the session's run of one chunk, from load()

    def _build_model(self, recipe: interface.Recipe) -> Graph:
        """The DLRM's ONNX graph at this task's spec."""
        return build_graph(self.spec)

    def version(self) -> str:
        return ort.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device, self.session)

    def served_graph(self) -> dict | None:
        """The model file's identity for result.json (None before load)."""
        return None if self.served is None else self.served.as_record()

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.initializers = None  # a standard task's 1.07 GiB of tables: the old ones go before the new come
        self.session = self._forward = None
        self.initializers = to_initializers(weights, self.spec.parameter_shapes, self.task_id)
        self.served = model_file(self.graph, self.initializers)
        self.session = new_session(self.served.model_path, self.mode, self.device)
        self._forward = functools.partial(self.session.run, ["logits"])

    def export(self) -> dict[str, np.ndarray]:
        if self.initializers is None:
            raise RuntimeError("load() must be called before export()")
        return to_neutral(self.initializers)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N] for any N >= 1."""
        if self._forward is None:
            raise RuntimeError("load() must be called before predict()")
        n = check_inputs(inputs)
        chunks = [
            self._forward(
                {
                    "dense": np.ascontiguousarray(inputs["dense"][start:stop], np.float32),
                    "sparse": np.ascontiguousarray(inputs["sparse"][start:stop], np.int32),
                }
            )[0]
            for start, stop, _ in predict_chunks(n)
        ]
        return np.concatenate(chunks)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        raise NotImplementedError(INFERENCE_ONLY)

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        raise NotImplementedError(INFERENCE_ONLY)
