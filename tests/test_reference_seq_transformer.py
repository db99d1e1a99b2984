"""seq-transformer reference implementations: weights, parameter count, recipe, predict, metric, learning.

    .venv/bin/python -m pytest tests/test_reference_seq_transformer.py -q

One compiled implementation per framework is built per module (compiling is
the slow part) and reloaded by each test that needs fresh weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import FRAMEWORKS, assert_exports_what_it_loaded, build

from conftest import seeded_init_weights
from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import COMPILED, Recipe
from levelfield.reference.schedule import batch_order
from levelfield.reference.seq_transformer.common import inputs as task_inputs
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.metric import score
from levelfield.rules import load_suite

TASK_ID = "seq-transformer"
TASK = load_suite().task(TASK_ID)


@pytest.fixture(scope="module", params=FRAMEWORKS)
def impl(request):
    return build(TASK_ID, request.param, COMPILED, model_spec.init_weights(0))


def random_weights(seed: int) -> dict[str, np.ndarray]:
    """Every entry distinct (unlike init's zero biases and unit scales), so a transposed or
    mis-reshaped mapping cannot round-trip by accident."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in model_spec.PARAMETER_SHAPES.items()}


def native_parameter_count(impl) -> int:
    """Trainable parameters as the framework itself counts them."""
    if impl.framework == "pytorch":
        return sum(p.numel() for p in impl.model.parameters() if p.requires_grad)
    if impl.framework == "tensorflow":
        return sum(int(np.prod(v.shape)) for v in impl.model.trainable_variables)
    import jax

    return sum(leaf.size for leaf in jax.tree_util.tree_leaves(impl.params))


# -- weights and recipe --------------------------------------------------------------------------


def test_export_load_round_trip_is_exact(impl):
    weights = random_weights(1)
    exported = assert_exports_what_it_loaded(impl, weights)
    impl.load(exported)
    again = impl.export()
    for name in weights:
        np.testing.assert_array_equal(again[name], weights[name], err_msg=name)


def test_parameter_count_matches_rules(impl):
    assert model_spec.trainable_count() == TASK.model["parameters"] == 69130
    assert native_parameter_count(impl) == TASK.model["parameters"]


def test_hyperparameters_are_the_rules_closed_values(impl):
    assert impl.hyperparameters() == Recipe.from_task(TASK).as_dict()


def test_init_weights_are_seeded_and_shaped():
    a = seeded_init_weights(model_spec, 0, "head.kernel")
    assert abs(float(a["layer0.mlp.dense1.kernel"].std()) - model_spec.INIT_STD) < 0.002
    assert not a["layer0.attention.query.bias"].any() and (a["final_norm.scale"] == 1).all()


# -- predict -------------------------------------------------------------------------------------


def test_predict_any_batch_size_matches_one_batch(impl):
    impl.load(model_spec.init_weights(0))
    tokens = np.random.default_rng(5).integers(0, 10, size=(21, 12)).astype(np.int32)
    whole = impl.predict({"tokens": tokens})  # one chunk, padded to 32
    assert whole.shape == (21, 12, 10) and whole.dtype == np.float32
    parts = [impl.predict({"tokens": tokens[a:b]}) for a, b in ((0, 1), (1, 4), (4, 21))]  # 1, 4, 32
    assert [p.shape[0] for p in parts] == [1, 3, 17]
    # Rows are independent; only the GEMM kernel choice for the padded size may differ (ulps).
    np.testing.assert_allclose(np.concatenate(parts), whole, rtol=0, atol=1e-6)


def test_predict_chunks_cover_requests():
    assert task_inputs.predict_chunks(3) == [(0, 3, 4)]
    assert task_inputs.predict_chunks(1) == [(0, 1, 1)]
    assert task_inputs.predict_chunks(2050) == [(0, 1024, 1024), (1024, 2048, 1024), (2048, 2050, 2)]
    with pytest.raises(ValueError):
        task_inputs.predict_chunks(0)


def test_model_inputs_and_labels():
    arrays = {"eval_inputs": np.array([[3, 1, 2]], np.uint8), "eval_targets": np.array([[1, 2, 3]], np.uint8)}
    x = task_inputs.model_inputs(arrays, "eval")["tokens"]
    y = task_inputs.labels(arrays, "eval")
    assert x.dtype == np.int32 and y.dtype == np.int64
    assert x.tolist() == [[3, 1, 2]] and y.tolist() == [[1, 2, 3]]
    with pytest.raises(ValueError):
        task_inputs.labels(arrays, "test")


# -- metric --------------------------------------------------------------------------------------


def one_hot_logits(tokens: np.ndarray) -> np.ndarray:
    return np.eye(10, dtype=np.float32)[tokens] * 5.0  # [N, L, 10], argmax = tokens


def test_exact_match_hand_computed():
    labels = np.array([[0, 1, 2], [3, 3, 9], [5, 6, 7], [1, 1, 1]])
    predicted = labels.copy()
    assert score(one_hot_logits(predicted), labels) == 1.0
    predicted[1, 2] = 8  # one wrong position fails the whole row
    predicted[3, 0] = 0
    assert score(one_hot_logits(predicted), labels) == 0.5
    assert score(predicted, labels) == 0.5  # integer tokens are accepted as predictions
    assert score(one_hot_logits((labels + 1) % 10), labels) == 0.0


def test_exact_match_rejects_mismatched_shapes():
    labels = np.zeros((4, 12), np.int64)
    with pytest.raises(ValueError, match="do not match"):
        score(np.zeros((4, 11, 10), np.float32), labels)
    with pytest.raises(ValueError, match="logits"):
        score(np.zeros((4, 12), np.float32), labels)  # float [N, L] is neither logits nor tokens


# -- learning --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def train_subset():
    arrays = load_dataset(TASK)
    return (task_inputs.model_inputs(arrays, "train")["tokens"][:4096], task_inputs.labels(arrays, "train")[:4096])


def test_short_run_lowers_training_loss(impl, train_subset):
    tokens, labels = train_subset
    impl.load(model_spec.init_weights(0))
    impl.set_train_data({"tokens": tokens}, labels)
    # Batch 16: the shape the equivalence tests compile too, so a warm compile cache serves both.
    steps = batch_order(seed=11, epoch=0, num_samples=len(tokens), batch_size=16)[:30]  # [30, 16]
    losses = impl.train_steps(steps, np.full(30, 3e-3))
    assert losses.shape == (30,) and np.all(np.isfinite(losses))
    # Starts at ln(10) = 2.30. Predicting each position's marginal digit distribution (no looking at
    # the input) reaches 1.45 nats on this data; 30 steps get to ~0.9 (the frameworks agree).
    assert losses[0] > 2.2, losses
    assert losses[-5:].mean() < 1.2, losses
