"""fmnist-resnet in ONNX Runtime: the ONNX graph of model.py in an InferenceSession; inference only.

    from levelfield.reference.fmnist_resnet.onnxruntime.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": no graph optimisation
    impl.load(weights)                                      # neutral weights -> model file (cached) -> session
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 10]

The framework's base (reference/frameworks/onnxruntime/base.py) does what
every ONNX Runtime implementation does alike: the graph built once per
instance without weights (`_build_model`), each `load` binding the neutral
weights as initializers (weights.py: conv kernels HWIO -> OIHW), writing or
finding the model file in the cache (model_file.py) and opening a session
over it (session.py: the device's execution provider, threads, the compile
mode's optimisation level), and the refusal to train. Nothing of PyTorch,
TensorFlow or JAX is imported. predict runs the rows in chunks of at most
MAX_PREDICT_BATCH at their exact size: a session takes any batch, so no
padding to a compiled shape is needed.

image-resnet50-standard subclasses this class through `_build_model`.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.common.inputs import predict_chunks
from levelfield.reference.fmnist_resnet.common.model_spec import PARAMETER_SHAPES
from levelfield.reference.fmnist_resnet.onnxruntime import weights
from levelfield.reference.fmnist_resnet.onnxruntime.model import build_graph
from levelfield.reference.frameworks.onnxruntime.base import FrameworkImplementation, run_chunks
from levelfield.reference.frameworks.onnxruntime.graph import Graph


class Implementation(FrameworkImplementation):
    task_id = "fmnist-resnet"
    weight_mapping = weights  # conv kernels HWIO <-> OIHW, the rest as it is
    parameter_shapes: dict[str, tuple] = PARAMETER_SHAPES  # no spec object here; image-resnet50-standard: its spec's

    def _build_model(self, recipe: interface.Recipe) -> Graph:
        """The ONNX graph, weights declared by name; image-resnet50-standard: ResNet-50's."""
        return build_graph()

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 10] with running BN statistics, for any N >= 1."""
        images = inputs["images"]
        return run_chunks(self._forward, {"images": (images, np.float32)}, predict_chunks(len(images)))
