"""What every ONNX Runtime implementation shares, once: the class each task's `implementation.py` subclasses.

    from levelfield.reference.ctr_dlrm.onnxruntime import weights
    from levelfield.reference.frameworks.onnxruntime.base import FrameworkImplementation

    class Implementation(FrameworkImplementation):
        task_id = "ctr-dlrm"
        weight_mapping = weights            # the task's to_initializers(weights, shapes, task_id) / to_neutral(inits)
        spec = SPEC                         # parameter_shapes: the spec's (or a class attribute of its own)

        def _build_model(self, recipe):     # the ONNX graph, its weights declared by name (bound at load)
            return build_graph(self.spec)

        def predict(self, inputs):
            return run_chunks(self._forward, {"dense": ..., "sparse": ...}, predict_chunks(n))

A task supplies its graph (`_build_model`), its weight mapping, its
`parameter_shapes` (by default its `spec`'s) and predict (the graph's inputs,
their dtypes and the task's chunks, through `run_chunks`); this class answers
the rest of the interface the same way for all of them: the device (`--device`,
else CUDA where offered, else the CPU), ONNX Runtime's version and determinism
record, load (the neutral weights bound as initializers, the model file
written or found in the cache, a session opened over it: session.py,
model_file.py), export (the initializers back to neutral weights), the served
model file's identity for result.json, and the refusal to train (the trainer
refuses `train --framework onnxruntime` before that). The graph is built once
per instance without weights; a session takes any batch, so predict runs
chunks at their exact size (no padding to a compiled shape).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import ClassVar

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


class FrameworkImplementation(interface.Implementation):
    framework = "onnxruntime"
    # The task's onnxruntime/weights.py: to_initializers(weights, shapes, task_id) (neutral names and layouts
    # -> the graph's initializers, checked against the shapes) and to_neutral(initializers).
    weight_mapping: ClassVar[ModuleType]
    output_name: ClassVar[str] = "logits"  # the graph's one output, the one predict fetches

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.device = ort_device(device)  # "cpu" or "cuda:N" (session.py)
        self.graph: Graph = self._build_model(recipe)  # the network without its weights
        self.initializers = None  # {name: array} in the graph's layouts, from load()
        self.served = None  # the model file the session serves (model_file.ModelFile)
        self.session = None
        self._forward = None  # the session's run of one chunk, from load()

    @property
    def parameter_shapes(self) -> dict[str, tuple]:
        """The neutral weights' names and shapes load checks against: the task's spec's."""
        return self.spec.parameter_shapes

    def version(self) -> str:
        return ort.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device, self.session)

    def served_graph(self) -> dict | None:
        """The model file's identity for result.json (None before load)."""
        return None if self.served is None else self.served.as_record()

    def load(self, weights: dict[str, np.ndarray]) -> None:
        # The old initializers and session go before the new come (a standard task's 1.07 GiB of tables).
        self.initializers = self.session = self._forward = None
        self.initializers = self.weight_mapping.to_initializers(weights, self.parameter_shapes, self.task_id)
        self.served = model_file(self.graph, self.initializers)
        self.session = new_session(self.served.model_path, self.mode, self.device)
        self._forward = functools.partial(self.session.run, [self.output_name])

    def export(self) -> dict[str, np.ndarray]:
        if self.initializers is None:
            raise RuntimeError("load() must be called before export()")
        return self.weight_mapping.to_neutral(self.initializers)

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        raise NotImplementedError(INFERENCE_ONLY)

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        raise NotImplementedError(INFERENCE_ONLY)


def run_chunks(
    forward: Callable | None, feeds: dict[str, tuple[np.ndarray, type]], chunks: Iterable[tuple[int, int, int]]
) -> np.ndarray:
    """predict's answer: the session's output for each chunk's rows of every input, concatenated.

    `feeds`: the graph's input name -> (the request's array, the dtype the graph declares); `chunks`: the task's
    predict_chunks (start, stop, padded size), run at their exact size (the padded size is for the compiled
    frameworks)."""
    if forward is None:
        raise RuntimeError("load() must be called before predict()")
    return np.concatenate(
        [
            forward({name: np.ascontiguousarray(array[start:stop], dtype) for name, (array, dtype) in feeds.items()})[0]
            for start, stop, _ in chunks
        ]
    )
