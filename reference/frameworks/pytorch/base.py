"""What every PyTorch implementation shares, once: the class each task's `implementation.py` subclasses.

    from levelfield.reference.fmnist_resnet.pytorch import weights
    from levelfield.reference.frameworks.pytorch.base import FrameworkImplementation

    class Implementation(FrameworkImplementation):
        task_id = "fmnist-resnet"
        weight_mapping = weights            # the task's load_neutral(model, weights) / export_neutral(model)

        def __init__(self, recipe, *, mode=COMPILED, device=None):
            super().__init__(recipe, mode=mode, device=device)     # self.device, self.train_data = None
            self.model = self._build_model(recipe).to(self.device)
            ...
            self._new_optimizer()

A task supplies the network (`self.model`, on `self.device`), its hooks
(`_build_model`, `_build_loss`, `_build_optimizer`), `_loss(rows)` (the mean
loss of one step's rows) and predict; this class answers the rest of the
interface the same way for all of them: the device (`--device`, else the
current GPU, else the CPU), torch's version and determinism record, neutral
weights in and out through the task's weight mapping (a load starts the
optimizer afresh), fresh optimizer state (a new optimizer from
`_build_optimizer`, and fp16's loss scale from its start: torch.amp's
GradScaler, disabled in the other precisions, so `run_steps` takes the plain
backward and step there), the shared step loop, and the accelerator's peak
memory. docs/architecture.md ("Interfaces") has the vocabulary.
"""

from __future__ import annotations

from types import ModuleType
from typing import ClassVar

import numpy as np
import torch

from levelfield.reference import interface
from levelfield.reference.frameworks.pytorch.parallel import (
    peak_device_memory_mib,
    reset_peak_device_memory,
    torch_device,
)
from levelfield.reference.frameworks.pytorch.steps import ENOUGH_GRAPHS, determinism_settings, grad_scaler, run_steps


class FrameworkImplementation(interface.Implementation):
    framework = "pytorch"
    # The task's pytorch/weights.py: load_neutral(model, weights) and export_neutral(model), neutral names and
    # layouts <-> the model's state_dict.
    weight_mapping: ClassVar[ModuleType]

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.device = torch_device(device)  # --device (cpu, cuda, cuda:N), else the current GPU, else the CPU
        reset_peak_device_memory(self.device)  # this run's peak, in a process that may have run others
        self.train_data = None  # the training set's tensors on the device, from set_train_data

    def version(self) -> str:
        return torch.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.weight_mapping.load_neutral(self.model, weights)
        self._new_optimizer()

    def export(self) -> dict[str, np.ndarray]:
        return self.weight_mapping.export_neutral(self.model)

    def _new_optimizer(self) -> None:
        """Fresh optimizer state (at __init__ and every load): a new optimizer, and fp16's loss scale from its
        start (a disabled GradScaler in every other precision)."""
        self.scaler = grad_scaler(self.device, self.recipe.precision)
        self.optimizer = self._build_optimizer(self.recipe)

    @ENOUGH_GRAPHS
    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        return run_steps(
            self._loss, self.model, self.optimizer, batch_indices, learning_rates, self.device, self.scaler
        )

    def peak_device_memory_mib(self) -> float | None:
        return peak_device_memory_mib(self.device)
