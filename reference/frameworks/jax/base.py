"""What every JAX implementation shares, once: the class each task's `implementation.py` subclasses.

    from levelfield.reference.ctr_dlrm.jax import weights
    from levelfield.reference.frameworks.jax.base import FrameworkImplementation

    class Implementation(FrameworkImplementation):
        task_id = "ctr-dlrm"
        weight_mapping = weights            # the task's to_params(weights, device, spec) / to_neutral(params, spec)

        def __init__(self, recipe, *, mode=COMPILED, device=None):
            super().__init__(recipe, mode=mode, device=device)     # _jax_device, place, state, train_data
            self.model, self.loss_fn, self.tx = ...                # its hooks
            self._step = jax.jit(_train_step, donate_argnums=0, **self.place.jit_options) if compiled else _train_step

A task supplies the Flax module, loss and optax transformation (`self.model`,
`self.loss_fn`, `self.tx`, built by its hooks), its module-level step and
predict functions, jitted into `self._step` and `self._forward`, and
predict; this class answers the rest of the interface the same way for all of
them: the device (`--device`, else this process's first device: its GPU where
it has one) and its placement (one device, or data parallel over N
processes, reference/frameworks/jax/parallel.py), JAX's version and
determinism record, neutral weights in and out of the params tree through the
task's weight mapping, a fresh TrainState at every load (`_new_state`), and the
shared step loop. A task whose state carries more than the params
(fmnist-resnet's batch_stats and fp16 loss scale) overrides `load`, `export`
and `_new_state`.
"""

from __future__ import annotations

from types import ModuleType
from typing import ClassVar

import jax
import numpy as np

from levelfield.reference import interface
from levelfield.reference.frameworks.jax.parallel import local_device, placement
from levelfield.reference.frameworks.jax.steps import TrainState, determinism_settings, run_steps


class FrameworkImplementation(interface.Implementation):
    framework = "jax"
    # The task's jax/weights.py: to_params(weights, device, spec), the Flax params tree of neutral weights, and
    # to_neutral(params, spec), back.
    weight_mapping: ClassVar[ModuleType]

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        # --device (cpu, cuda, cuda:N), else this process's first device: its GPU where it has one (run on
        # an H200: docs/scale.md, GPU paths).
        self._jax_device = local_device(device)
        self.device = str(self._jax_device)
        self.place = placement(self._jax_device)  # one device, or data-parallel over N processes
        self.state = None  # the TrainState, from load
        self.train_data = None  # the training set's arrays on the device, from set_train_data

    def version(self) -> str:
        return jax.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self._jax_device)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        self.state = self._new_state({"params": self.weight_mapping.to_params(weights, self._jax_device, self.spec)})

    def export(self) -> dict[str, np.ndarray]:
        return self.weight_mapping.to_neutral(self.place.local(self.state.params), self.spec)

    def _new_state(self, variables: dict) -> TrainState:
        """A fresh TrainState (optimizer state from self.tx.init) of the Flax variables, placed."""
        state = TrainState.create(
            apply_fn=self.model.apply, params=variables["params"], tx=self.tx, loss_fn=self.loss_fn
        )
        # On the device as arrays: TrainState.create leaves `step` a Python int, and the step after the
        # first would then see a new input type and compile again, inside the timed run.
        return self.place.replicate(state)

    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        self.state, losses = run_steps(
            self._step, self.state, self.train_data, batch_indices, learning_rates, self.place
        )
        return losses
