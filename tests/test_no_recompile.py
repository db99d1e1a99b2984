"""After the trainer's warm-up (one step, then reloading the initial weights), nothing compiles again,
whatever the number of steps per `train_steps` call.

A compilation inside `run_start`..`run_stop` would be timed as training. JAX
is checked here because its jit cache keys on input types: a state rebuilt
with a Python int step (flax's TrainState.create) once recompiled on the
second step after every load.
"""

from __future__ import annotations

import importlib
import logging

import jax
import numpy as np
import pytest

from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import Recipe
from levelfield.reference.registry import load_implementation
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite


@pytest.mark.parametrize("task_id", ["fmnist-resnet", "seq-transformer", "ctr-dlrm"])
def test_jax_steps_after_warmup_and_reload_do_not_compile(task_id, caplog):
    task = load_suite().task(task_id)
    common = f"levelfield.reference.{task.package}.common"
    inputs, spec = importlib.import_module(f"{common}.inputs"), importlib.import_module(f"{common}.model_spec")
    arrays = load_dataset(task)
    impl = load_implementation(task_id, "jax")(Recipe.from_task(task))
    weights = spec.init_weights(0)
    impl.load(weights)
    batch = impl.recipe.global_batch_size
    impl.set_train_data({k: v[: 4 * batch] for k, v in inputs.model_inputs(arrays, "train").items()},
                        inputs.labels(arrays, "train")[: 4 * batch])
    order, lrs = batch_order(0, 0, 4 * batch, batch), np.array([0.01, 0.02, 0.005, 0.01])
    impl.train_steps(order[:1], lrs[:1])  # the trainer's warm-up
    impl.load(weights)
    with jax.log_compiles(True), caplog.at_level(logging.DEBUG):
        # Chunks of 2, 1 and 3 steps, as the trainer's progress chunks vary: slicing a device array per
        # step or stacking the losses on the device once compiled a program for every new length.
        for start, stop in ((1, 3), (3, 4), (0, 3)):
            impl.train_steps(order[start:stop], lrs[start:stop])
    compiles = [r.getMessage() for r in caplog.records if "ompil" in r.getMessage()]
    assert not compiles, compiles[:3]
