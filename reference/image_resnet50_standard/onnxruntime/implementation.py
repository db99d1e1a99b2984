"""image-resnet50-standard in ONNX Runtime: fmnist-resnet's ONNX Runtime implementation at ResNet-50's sizes.

    impl = Implementation(Recipe.from_task(task))           # mode="eager": no graph optimisation
    impl.load(init_weights(0))
    logits = impl.predict(model_inputs(arrays, "eval"))     # uint8 centre crops -> float32 [N, 1000]

Everything is fmnist-resnet's (reference/fmnist_resnet/onnxruntime/
implementation.py, and the framework's base: the graph without weights per
instance, the model file cached per weights, the session) but the network,
through its `_build_model` hook (ResNet-50 v1.5 of a ResNetSpec, model.py; the
weights map as fmnist-resnet's, conv kernels HWIO -> OIHW), and predict's
input: the uint8 crops go into the session as they are, normalised inside the
graph, in chunks of at most 64 rows (common/inputs.py).
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.onnxruntime.implementation import Implementation as SmallImplementation
from levelfield.reference.frameworks.onnxruntime.base import run_chunks
from levelfield.reference.frameworks.onnxruntime.graph import Graph
from levelfield.reference.image_resnet50_standard.common.inputs import predict_chunks
from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC, ResNetSpec
from levelfield.reference.image_resnet50_standard.onnxruntime.model import build_graph


class Implementation(SmallImplementation):
    task_id = "image-resnet50-standard"
    spec: ResNetSpec = SPEC  # the sizes (the equivalence tests set a reduced spec on a subclass)

    @property
    def parameter_shapes(self) -> dict[str, tuple]:
        return self.spec.parameter_shapes  # the spec's again (fmnist-resnet's class attribute would shadow it)

    def _build_model(self, recipe: interface.Recipe) -> Graph:
        return build_graph(self.spec)

    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 1000] of uint8 centre crops [N, 224, 224, 3], running BN statistics."""
        images = inputs["images"]
        return run_chunks(self._forward, {"images": (images, np.uint8)}, predict_chunks(len(images)))
