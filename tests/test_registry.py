"""The registry finds implementations by convention and never imports a framework to list them."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_cli
from levelfield.ground.errors import UserError
from levelfield.ground.registry import (
    load_implementation,
    module_name,
    registered,
    reused_task,
    task_module,
    task_package,
)
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order, learning_rates
from levelfield.reference.weights import check_weights, load_weights, save_weights
from levelfield.rules import load_suite


def test_module_name_convention():
    assert task_package("ctr-dlrm-standard") == "levelfield.reference.ctr_dlrm_standard"  # the one converter
    assert module_name("fmnist-resnet", "jax") == "levelfield.reference.fmnist_resnet.jax.implementation"
    with pytest.raises(ValueError, match="expected a task id"):
        task_package("Ctr_DLRM")


def test_a_task_s_missing_parts_are_those_of_the_task_it_reuses():
    """ctr-dlrm-standard has its own model spec and nothing else in common/: the registry serves ctr-dlrm's."""
    assert reused_task("ctr-dlrm-standard") == "ctr-dlrm" and reused_task("ctr-dlrm") is None
    assert task_module("ctr-dlrm-standard", "metric") is task_module("ctr-dlrm", "metric")
    assert task_module("ctr-dlrm-standard", "dataset") is task_module("ctr-dlrm", "dataset")
    own = task_module("ctr-dlrm-standard", "model_spec")
    assert own is not task_module("ctr-dlrm", "model_spec") and own.TASK_ID == "ctr-dlrm-standard"
    assert task_module("seq-transformer-standard", "inputs").MAX_PREDICT_BATCH == 32  # its own part wins
    with pytest.raises(ValueError, match="no common/metric for it"):
        task_module("no-such-task", "metric")


def test_registered_covers_every_task_and_framework():
    suite = load_suite()
    entries = registered(suite)
    assert {(e.task, e.framework) for e in entries} == {(t, f) for t in suite.tasks for f in suite.frameworks}


def test_unknown_framework_and_missing_implementation():
    with pytest.raises(UserError, match="unknown framework 'mxnet'"):
        load_implementation("fmnist-resnet", "mxnet")
    with pytest.raises(UserError, match="no pytorch implementation of no-such-task"):
        load_implementation("no-such-task", "pytorch")


def test_list_command_shows_the_table():
    result = run_cli("list")
    assert result.returncode == 0, result.stderr
    assert "registered implementations" in result.stdout and "| fmnist-resnet " in result.stdout


def test_batch_order_is_a_seeded_permutation_without_the_last_partial_batch():
    order = batch_order(seed=3, epoch=1, num_samples=1000, batch_size=64)
    assert order.shape == (15, 64) and len(np.unique(order)) == 15 * 64
    assert np.array_equal(order, batch_order(3, 1, 1000, 64))
    assert not np.array_equal(order, batch_order(3, 2, 1000, 64))
    assert not np.array_equal(order, batch_order(4, 1, 1000, 64))


def test_cosine_schedule_with_warmup():
    task = load_suite().task("seq-transformer")
    recipe = Recipe.from_task(task, learning_rate=0.01, warmup_epochs=1)
    lrs = learning_rates(recipe, steps_per_epoch=10, epochs=3)
    assert lrs.shape == (30,)
    np.testing.assert_allclose(lrs[:10], 0.01 * np.arange(1, 11) / 10)
    assert lrs[10] == pytest.approx(0.01) and lrs[-1] < 0.0002 and np.all(np.diff(lrs[10:]) <= 0)


def test_recipe_rejects_a_fixed_hyperparameter_override():
    with pytest.raises(ValueError, match="not tunable in fmnist-resnet: momentum"):
        Recipe.from_task(load_suite().task("fmnist-resnet"), momentum=0.5)


def test_weights_round_trip_and_refuse_pickles(tmp_path):
    weights = {"a.kernel": np.arange(6, dtype=np.float32).reshape(2, 3), "a.bias": np.zeros(3, np.float32)}
    save_weights(tmp_path / "w.npz", weights)
    loaded = load_weights(tmp_path / "w.npz")
    assert set(loaded) == set(weights) and all(np.array_equal(loaded[k], weights[k]) for k in weights)
    with pytest.raises(UserError, match="already exists"):
        save_weights(tmp_path / "w.npz", weights)
    np.savez(tmp_path / "evil.npz", x=np.array([object()], dtype=object))
    with pytest.raises(UserError, match="not a levelfield weights file"):
        load_weights(tmp_path / "evil.npz")
    with pytest.raises(UserError, match=r"a.kernel: shape \(2, 3\), expected \(3, 2\)"):
        check_weights(loaded, {"a.kernel": (3, 2), "a.bias": (3,)}, "w.npz")


def test_an_implementation_refuses_a_recipe_it_was_not_written_for():
    task = load_suite().task("ctr-dlrm")
    recipe = Recipe.from_task(task)
    cls = load_implementation("ctr-dlrm", "pytorch")
    other = Recipe(
        recipe.global_batch_size, recipe.learning_rate, recipe.warmup_epochs, {**recipe.fixed, "optimizer": "sgd"}
    )
    with pytest.raises(ValueError, match="ctr-dlrm/pytorch implements .*'optimizer': 'adam'.*'optimizer': 'sgd'"):
        cls(other, mode="eager")
    assert cls(recipe, mode="eager").name == "ctr-dlrm/pytorch"
