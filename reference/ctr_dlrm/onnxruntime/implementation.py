"""ctr-dlrm in ONNX Runtime: the DLRM's ONNX graph (model.py) in an InferenceSession; inference only.

    impl = Implementation(Recipe.from_task(task))          # mode="eager": no graph optimisation
    impl.load(init_weights(seed))
    logits = impl.predict(model_inputs(arrays, "eval"))    # float32 [N]

The framework's base (reference/frameworks/onnxruntime/base.py) builds,
caches and serves the model file and refuses to train; this class gives the
graph at the class's `spec` and predict's inputs: chunks of at most
MAX_PREDICT_BATCH rows at their exact size. ctr-dlrm-standard subclasses it
with its spec.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import interface
from levelfield.reference.ctr_dlrm.common import model_spec
from levelfield.reference.ctr_dlrm.common.inputs import check_inputs, predict_chunks
from levelfield.reference.ctr_dlrm.onnxruntime import weights
from levelfield.reference.ctr_dlrm.onnxruntime.model import build_graph
from levelfield.reference.frameworks.onnxruntime.base import FrameworkImplementation, run_chunks
from levelfield.reference.frameworks.onnxruntime.graph import Graph


class Implementation(FrameworkImplementation):
    task_id = "ctr-dlrm"
    weight_mapping = weights  # the same names and layouts: checked, float32, contiguous
    spec: model_spec.DLRMSpec = model_spec.SPEC  # the network's shapes (ctr-dlrm-standard: its own spec)

    def _build_model(self, recipe: interface.Recipe) -> Graph:
        """The DLRM's ONNX graph at this task's spec."""
        return build_graph(self.spec)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N] for any N >= 1."""
        feeds = {"dense": (inputs["dense"], np.float32), "sparse": (inputs["sparse"], np.int32)}
        return run_chunks(self._forward, feeds, predict_chunks(check_inputs(inputs)))
