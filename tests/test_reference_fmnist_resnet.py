"""fmnist-resnet reference implementations, one framework at a time, plus the numpy-only common code.

    .venv/bin/python -m pytest tests/test_reference_fmnist_resnet.py -q

Per framework (compiled mode, one implementation per framework per module):
export/load round trip, trainable parameter count, hyperparameters vs the
rules, predict at any batch size, and a 30-step training run on real
Fashion-MNIST that must lower the loss. The metric and input helpers are tested
on hand-made arrays.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from equivalence import FRAMEWORKS, assert_exports_what_it_loaded, build

from conftest import seeded_init_weights
from levelfield.ground.errors import UserError
from levelfield.reference.fmnist_resnet.common import inputs as fm_inputs
from levelfield.reference.fmnist_resnet.common import model_spec as spec
from levelfield.reference.fmnist_resnet.common.metric import score
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order, learning_rates
from levelfield.rules import load_suite

TASK_ID = "fmnist-resnet"


@pytest.fixture(scope="module")
def task():
    return load_suite().task(TASK_ID)


@pytest.fixture(scope="module", params=FRAMEWORKS)
def impl(request):
    return build(TASK_ID, request.param, "compiled", spec.init_weights(0))


@pytest.fixture(scope="module")
def fmnist(task):
    from levelfield.reference.datasets import load_dataset

    return load_dataset(task)  # `make test` installs dataset-fashion-mnist: missing data is a failure, not a skip


def random_weights(seed: int) -> dict[str, np.ndarray]:
    """A different random value in every element of every tensor (running variances positive)."""
    rng = np.random.default_rng(seed)
    return {
        name: (rng.uniform(0.5, 2.0, shape) if name.endswith(".var") else rng.normal(0, 0.3, shape)).astype(np.float32)
        for name, shape in spec.PARAMETER_SHAPES.items()
    }


# -- numpy-only common code ---------------------------------------------------------------


def test_spec_trainable_count_matches_rules(task):
    assert spec.trainable_count() == task.model["parameters"] == 77754
    assert not any(name.endswith((".mean", ".var")) for name in spec.TRAINABLE)


def kernel_std_ratio(kernel: np.ndarray, fan_out: int) -> float:
    return float(kernel.std() / math.sqrt(2 / fan_out))


def test_init_weights_deterministic_and_as_specified():
    a = seeded_init_weights(spec, 0, "block3.conv2.kernel")
    # 36,864 draws: He-normal fan_out std = sqrt(2 / (3 * 3 * 64)), estimated within ~0.4%
    assert kernel_std_ratio(a["block3.conv2.kernel"], 9 * 64) == pytest.approx(1.0, abs=0.02)
    assert kernel_std_ratio(a["block2.proj.kernel"], 32) == pytest.approx(1.0, abs=0.1)  # fan_out 1 * 1 * 32
    assert np.abs(a["head.kernel"]).max() <= 1 / 8 and np.abs(a["head.bias"]).max() <= 1 / 8
    assert np.all(a["stem.bn.scale"] == 1) and np.all(a["stem.bn.var"] == 1)
    assert np.all(a["block2.proj_bn.bias"] == 0) and np.all(a["block2.proj_bn.mean"] == 0)


def test_model_inputs_and_labels():
    arrays = {"eval_images": np.array([[[0, 255], [51, 128]]], np.uint8), "eval_labels": np.array([7], np.uint8)}
    images = fm_inputs.model_inputs(arrays, "eval")["images"]
    assert images.dtype == np.float32 and images.shape == (1, 2, 2)
    np.testing.assert_array_equal(images[0], np.array([[0, 1], [0.2, 128 / 255]], np.float32))
    labels = fm_inputs.labels(arrays, "eval")
    assert labels.dtype == np.int64 and labels.tolist() == [7]
    with pytest.raises(ValueError, match="split"):
        fm_inputs.model_inputs(arrays, "test")


def test_predict_chunks_and_padding():
    assert fm_inputs.predict_chunks(1) == [(0, 1, 1)]
    assert fm_inputs.predict_chunks(17) == [(0, 17, 32)]
    assert fm_inputs.predict_chunks(1024) == [(0, 1024, 1024)]
    assert fm_inputs.predict_chunks(2500) == [(0, 1024, 1024), (1024, 2048, 1024), (2048, 2500, 512)]
    with pytest.raises(ValueError):
        fm_inputs.predict_chunks(0)
    padded = fm_inputs.pad_rows(np.ones((3, 2), np.float32), 4)
    assert padded.shape == (4, 2) and padded[3].tolist() == [0, 0] and padded[:3].min() == 1


def test_metric_hand_computed():
    logits = np.array(
        [
            [0.1, 0.9, 0.0],  # predicts 1
            [2.0, 1.0, 3.0],  # predicts 2
            [5.0, 5.0, 1.0],  # tie: argmax takes the first, 0
            [0.0, 0.0, 1.0],
        ]
    )  # predicts 2
    assert score(logits, np.array([1, 2, 0, 2])) == 1.0
    assert score(logits, np.array([1, 0, 1, 2])) == 0.5
    assert score(logits, np.array([0, 0, 1, 0])) == 0.0
    # a row with NaN (a diverged model) counts as wrong
    assert score(np.array([[np.nan, 1.0], [0.0, 1.0]]), np.array([1, 1])) == 0.5
    with pytest.raises(ValueError, match="expected outputs"):
        score(logits, np.array([1, 2, 0]))


# -- per framework -----------------------------------------------------------------------


def test_export_load_round_trip_is_exact(impl):
    weights = random_weights(1)
    assert set(weights) == set(spec.PARAMETER_SHAPES)
    exported = assert_exports_what_it_loaded(impl, weights)
    impl.load(exported)
    again = impl.export()
    assert all(np.array_equal(again[name], weights[name]) for name in weights)


def test_load_rejects_wrong_shapes(impl):
    weights = spec.init_weights(0)
    weights["head.kernel"] = weights["head.kernel"].T
    with pytest.raises(UserError, match="head.kernel"):
        impl.load(weights)


def framework_trainable_count(impl) -> int:
    if impl.framework == "pytorch":
        return sum(p.numel() for p in impl.model.parameters() if p.requires_grad)
    if impl.framework == "tensorflow":
        return sum(math.prod(v.shape) for v in impl.model.trainable_variables)
    import jax

    return sum(leaf.size for leaf in jax.tree.leaves(impl.state.params))


def test_trainable_parameter_count_matches_rules(impl, task):
    assert framework_trainable_count(impl) == task.model["parameters"]


def test_hyperparameters_match_rules(impl, task):
    assert impl.hyperparameters() == Recipe.from_task(task).as_dict()


def test_predict_any_batch_size(impl):
    impl.load(spec.init_weights(2))
    images = np.random.default_rng(3).random((32, spec.IMAGE_SIZE, spec.IMAGE_SIZE), dtype=np.float32)
    full = impl.predict({"images": images})
    assert full.shape == (32, spec.NUM_CLASSES) and full.dtype == np.float32 and np.all(np.isfinite(full))
    for n in (1, 3, 17):
        part = impl.predict({"images": images[:n]})
        assert part.shape == (n, spec.NUM_CLASSES)
        # Other batch sizes may pick other kernels: fp32 rounding only, as in the equivalence tests.
        np.testing.assert_allclose(part, full[:n], rtol=0, atol=1e-5, err_msg=f"batch of {n}")


def test_short_training_run_lowers_loss(impl, task, fmnist):
    """40 steps of 32 real images under the rules' cosine schedule from lr 0.1: the loss falls.

    Batch 32 is the equivalence tests' shape, so compiled graphs (and torch's
    on-disk Inductor cache) are shared. No eval accuracy here: after 40 steps
    the BN running statistics still carry (0.9^40 = 1.5%) of their initial
    var = 1, far above the true ~1e-2, so eval mode lags train mode.
    """
    rows, batch, steps = 4096, 32, 40
    impl.load(spec.init_weights(0))
    impl.set_train_data(
        {"images": fm_inputs.model_inputs(fmnist, "train")["images"][:rows]}, fm_inputs.labels(fmnist, "train")[:rows]
    )
    recipe = Recipe.from_task(task, global_batch_size=batch)
    losses = impl.train_steps(
        batch_order(seed=0, epoch=0, num_samples=rows, batch_size=batch)[:steps],
        learning_rates(recipe, steps_per_epoch=steps, epochs=1),
    )
    assert losses.shape == (steps,) and losses.dtype == np.float32 and np.all(np.isfinite(losses))
    assert losses[:5].mean() > 2.0  # ~ln(10) = 2.30 at initialisation
    assert losses[-5:].mean() < losses[:5].mean() - 0.6, losses  # typically ~1.3 after 40 steps
    exported = impl.export()
    assert not np.array_equal(exported["block3.bn2.mean"], spec.init_weights(0)["block3.bn2.mean"])


def test_tensorflow_retracing_warning_is_dropped_and_other_warnings_are_not():
    """Every padded batch size traces once in the warm-up (at most 11); TensorFlow's warning about
    it buried the demo's output. Only that warning is dropped."""
    import logging

    import levelfield.reference.frameworks.tensorflow.keras_backend  # noqa: F401 - installs the filter

    logger = logging.getLogger("tensorflow")

    def record(message: str) -> logging.LogRecord:
        return logger.makeRecord("tensorflow", logging.WARNING, __file__, 1, message, None, None)

    assert not logger.filter(record("5 out of the last 262 calls to <f> triggered tf.function retracing. Tracing"))
    assert logger.filter(record("Gradients do not exist for variables"))
