"""ctr-dlrm reference implementations: weights, parameter count, hyperparameters, predict shapes,
the roc_auc metric, and a short training sanity run.

    .venv/bin/python -m pytest tests/test_reference_ctr_dlrm.py -q

One compiled implementation per framework is built for the whole module and
reloaded by each test; the metric tests need numpy only.
"""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import FRAMEWORKS, assert_exports_what_it_loaded, build

from conftest import seeded_init_weights
from levelfield.reference.ctr_dlrm.common import metric, model_spec
from levelfield.reference.ctr_dlrm.common.inputs import labels, model_inputs
from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import COMPILED, Recipe
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

TASK = "ctr-dlrm"
# Every framework is installed by `make test`; a missing one fails its tests rather than skipping them.
framework = pytest.mark.parametrize("fw", FRAMEWORKS)


@pytest.fixture(scope="module")
def task():
    return load_suite().task(TASK)


@pytest.fixture(scope="module")
def train(task):
    arrays = load_dataset(task)
    return model_inputs(arrays, "train"), labels(arrays, "train")


@pytest.fixture(scope="module")
def impls():
    """{framework: compiled implementation}, built lazily, once per module."""
    cache = {}

    def get(fw):
        if fw not in cache:
            cache[fw] = build(TASK, fw, COMPILED, model_spec.init_weights(0))
        return cache[fw]

    return get


def rows(inputs, n, start=0):
    return {name: value[start : start + n] for name, value in inputs.items()}


def framework_parameter_count(impl) -> int:
    """Trainable scalars as the framework itself counts them."""
    if impl.framework == "pytorch":
        return sum(p.numel() for p in impl.model.parameters() if p.requires_grad)
    if impl.framework == "tensorflow":
        return sum(int(np.prod(v.shape)) for v in impl.model.trainable_variables)
    import jax

    return sum(leaf.size for leaf in jax.tree_util.tree_leaves(impl.state.params))


def mean_bce(logits, y):
    """Mean sigmoid cross-entropy in float64 numpy (the stable form)."""
    z = logits.astype(np.float64)
    return float(np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))))


# -- weights and model --------------------------------------------------------------
def test_spec_parameter_count_matches_rules(task):
    assert model_spec.trainable_count() == task.model["parameters"] == 35553
    assert tuple(task.dataset["params"]["cardinalities"]) == model_spec.CARDINALITIES


def test_init_weights_are_deterministic_and_seeded():
    a = seeded_init_weights(model_spec, 7, "top.dense0.kernel")
    bound = np.sqrt(1 / model_spec.CARDINALITIES[0])  # DLRM's uniform(-sqrt(1/n), sqrt(1/n))
    assert np.abs(a["embedding0.table"]).max() <= bound


@framework
def test_export_load_round_trip_is_exact(fw, impls):
    impl = impls(fw)
    rng = np.random.default_rng(11)  # not the init values, so a no-op load() would fail
    weights = {n: rng.standard_normal(s).astype(np.float32) for n, s in model_spec.PARAMETER_SHAPES.items()}
    assert_exports_what_it_loaded(impl, weights)


@framework
def test_trainable_parameter_count_matches_rules(fw, impls, task):
    assert framework_parameter_count(impls(fw)) == task.model["parameters"]


@framework
def test_hyperparameters_match_rules(fw, impls, task):
    expected = Recipe.from_task(task).as_dict()
    actual = impls(fw).hyperparameters()
    assert set(actual) == set(expected)
    for name, value in expected.items():
        if isinstance(value, str):
            assert actual[name] == value, name
        else:  # rel 1e-6: Optax keeps beta2 / eps as float32 arrays (0.999 -> 0.99900001)
            assert actual[name] == pytest.approx(value, rel=1e-6, abs=0), name


# -- predict ------------------------------------------------------------------------
@framework
def test_predict_any_batch_size_matches_one_large_batch(fw, impls, train):
    impl = impls(fw)
    impl.load(model_spec.init_weights(0))
    inputs = rows(train[0], 4100)  # two chunks: 4096 rows + 4 rows padded to 4
    large = impl.predict(inputs)
    assert large.shape == (4100,) and large.dtype == np.float32
    for n in (1, 3, 17):
        small = impl.predict(rows(inputs, n, start=4100 - n))  # also the rows of the second chunk
        assert small.shape == (n,) and small.dtype == np.float32
        # Same rows, different padded batch shape: only the kernels' blocking may differ.
        np.testing.assert_allclose(small, large[4100 - n :], rtol=0, atol=1e-6, err_msg=f"{fw} n={n}")
        np.testing.assert_allclose(impl.predict(rows(inputs, n)), large[:n], rtol=0, atol=1e-6)


# -- metric -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "scores, y, expected",
    [
        ([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], 0.75),  # 3 of 4 pairs ordered
        ([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1], 1.0),
        ([0.1, 0.2, 0.3, 0.4], [1, 1, 0, 0], 0.0),
        ([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1], 0.5),  # all tied: every pair counts 1/2
        ([1.0, 2.0, 2.0, 3.0], [0, 1, 0, 1], 0.875),  # pairs: 1, 1/2 (tie), 1, 1 -> 3.5 / 4
        ([3.0, 1.0, 2.0, 2.0, 2.0], [1, 0, 1, 0, 0], 5 / 6),  # (3 > all 3) + (2 vs 1: 1, vs 2, 2: 1/2 each)
    ],
)
def test_roc_auc_hand_computed(scores, y, expected):
    assert metric.score(np.array(scores), np.array(y, np.uint8)) == pytest.approx(expected, abs=1e-12)


def test_roc_auc_matches_pairwise_definition_and_ignores_monotonic_maps():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 20, 300).astype(np.float32) / 4  # many ties
    y = (rng.random(300) < 0.4).astype(np.uint8)
    pos, neg = scores[y == 1], scores[y == 0]
    pairwise = (np.sum(pos[:, None] > neg[None, :]) + 0.5 * np.sum(pos[:, None] == neg[None, :])) / (
        len(pos) * len(neg)
    )
    assert metric.score(scores, y) == pytest.approx(pairwise, abs=1e-12)
    assert metric.score(1 / (1 + np.exp(-scores.astype(np.float64))), y) == pytest.approx(pairwise, abs=1e-12)
    assert metric.score(scores[:, None], y.astype(np.float32)) == pytest.approx(pairwise, abs=1e-12)


@pytest.mark.parametrize(
    "scores, y, message",
    [
        ([0.1, 0.2, 0.3], [1, 1, 1], "one class"),
        ([0.1, 0.2, 0.3], [0, 0, 0], "one class"),
        ([0.1, np.nan, 0.3], [0, 1, 0], "NaN"),
        ([0.1, 0.2, 0.3], [0, 2, 1], "0 or 1"),
        ([0.1, 0.2], [0, 1, 1], "expected scores"),
    ],
)
def test_roc_auc_rejects_undefined_inputs(scores, y, message):
    with pytest.raises(ValueError, match=message):
        metric.score(np.array(scores), np.array(y))


# -- training -----------------------------------------------------------------------
@framework
def test_short_training_lowers_the_loss(fw, impls, train):
    """30 Adam steps of 64 rows at the rules' LR lower the loss on the 4096 rows they came from."""
    impl = impls(fw)
    inputs, y = rows(train[0], 4096), train[1][:4096]
    impl.load(model_spec.init_weights(0))
    before = mean_bce(impl.predict(inputs), y)
    impl.set_train_data(inputs, y)
    steps = batch_order(seed=5, epoch=0, num_samples=4096, batch_size=64)[:30]
    lr = Recipe.from_task(load_suite().task(TASK)).learning_rate
    losses = impl.train_steps(steps, np.full(30, lr))
    assert losses.shape == (30,) and np.all(np.isfinite(losses))
    after = mean_bce(impl.predict(inputs), y)
    assert after < before - 0.01, (fw, before, after)
