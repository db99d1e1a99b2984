"""After the trainer's warm-up (one step, then reloading the initial weights), nothing compiles again,
whatever the number of steps per `train_steps` call.

A compilation inside `run_start`..`run_stop` would be timed as training. JAX
is checked here because its jit cache keys on input types: a state rebuilt
with a Python int step (flax's TrainState.create) once recompiled on the
second step after every load.
"""

from __future__ import annotations

import logging

import jax
import numpy as np
import pytest

from levelfield.ground.registry import load_implementation, task_module
from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

# Every task in rules 1.0, and rules 1.1's mixed precision (bf16 compute, float32 state) for fmnist-resnet.
STEP_CASES = [("fmnist-resnet", "1.0", {}), ("seq-transformer", "1.0", {}), ("ctr-dlrm", "1.0", {})]
STEP_CASES += [("fmnist-resnet", "1.1", {"precision": "bf16"})]


@pytest.mark.parametrize("task_id, rules_version, overrides", STEP_CASES)
def test_jax_steps_after_warmup_and_reload_do_not_compile(task_id, rules_version, overrides, caplog):
    task = load_suite(rules_version).task(task_id)
    inputs, spec = task_module(task, "inputs"), task_module(task, "model_spec")
    arrays = load_dataset(task)
    impl = load_implementation(task_id, "jax")(Recipe.from_task(task, **overrides))
    weights = spec.init_weights(0)
    impl.load(weights)
    batch = impl.recipe.global_batch_size
    impl.set_train_data(
        {k: v[: 4 * batch] for k, v in inputs.model_inputs(arrays, "train").items()},
        inputs.labels(arrays, "train")[: 4 * batch],
    )
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


@pytest.mark.parametrize("task_id", ["fmnist-resnet", "seq-transformer", "ctr-dlrm"])
def test_jax_predict_of_any_length_compiles_only_its_padded_bucket(task_id, caplog):
    """The runner's Server batches take every length up to their cap; once the power-of-two buckets
    are warm, a batch of 3, 5, 6 or 7 rows must run without compiling (the padding is cut on the host)."""
    task = load_suite().task(task_id)
    inputs, spec = task_module(task, "inputs"), task_module(task, "model_spec")
    eval_inputs = inputs.model_inputs(load_dataset(task), "eval")
    impl = load_implementation(task_id, "jax")(Recipe.from_task(task))
    impl.load(spec.init_weights(0))
    warm = {n: impl.predict({k: v[:n] for k, v in eval_inputs.items()}) for n in (4, 8)}
    with jax.log_compiles(True), caplog.at_level(logging.DEBUG):
        outputs = {n: impl.predict({k: v[:n] for k, v in eval_inputs.items()}) for n in (3, 5, 6, 7)}
    compiles = [r.getMessage() for r in caplog.records if "ompil" in r.getMessage()]
    assert not compiles, compiles[:3]
    assert outputs[3].shape[0] == 3 and outputs[7].shape[0] == 7
    np.testing.assert_allclose(outputs[3], warm[4][:3], rtol=1e-5, atol=1e-6)  # padding never leaks into rows
