"""ctr-dlrm: PyTorch, TensorFlow and JAX agree on outputs, losses and Adam updates.

    .venv/bin/python -m pytest tests/test_equivalence_ctr_dlrm.py -q

Each framework is built once per mode (module-scoped fixture) and reloaded
between tests, so each compiled graph is compiled once per module: the train
step at BATCH rows and predict at one padded bucket (64 rows).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from equivalence import (
    FRAMEWORKS,
    INFERENCE_ONLY_FRAMEWORKS,
    PERTURBED,
    assert_close_across,
    assert_training_equivalent,
    build,
    predict_all,
    train_all,
)

from levelfield.reference.ctr_dlrm.common import model_spec
from levelfield.reference.ctr_dlrm.common.inputs import labels, model_inputs
from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import MODES
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

TASK = "ctr-dlrm"
SAMPLES = 2048  # training rows placed in framework memory
BATCH = 64  # rows per training step
PREDICT_ROWS = 64  # rows of the forward comparison: one predict bucket, and the training batch's
# shape, so JAX's eager mode compiles its per-op kernels once for both
# A different LR each step: 0.01 is the rules' default, 0.03 and 0.002 stay inside [1e-4, 0.05].
LEARNING_RATES = np.array([0.01, 0.03, 0.002])

# Forward logits (|logit| < 2 here): measured max diff 4.5e-8 in both modes. The
# frameworks sum the same products in different orders (oneDNN / Eigen / XLA
# matmul blocking over K <= 64 terms, bmm vs einsum for the 16-wide dots); with
# fp32's 6e-8 relative rounding per addition that stays around 1e-7, so 1e-6 keeps
# a 20x margin and still fails on any real difference (the perturbation below
# moves logits by ~1e-3).
FORWARD_ATOL = 1e-6
# Per-step loss (~0.7): measured max diff 1.3e-6 (fp32 ulp at 0.7 is 6e-8). Step 1
# agrees to ~1e-7; steps 2 and 3 inherit the weight differences below.
LOSS_ATOL = 1e-5
# Weights after 3 Adam steps, each moving a touched weight by up to lr (~0.04 in
# total). Adam divides each gradient by its own RMS + eps (1e-8), so the update of
# an element whose gradient is near eps on some step is as uncertain as that
# gradient's *relative* rounding error: the frameworks' fp32 gradients differ by
# ~3e-10 absolute (different summation orders), which for |g| ~ 5e-8 is ~1% of a
# 0.03 step. Measured (2048 rows, batch 64, seed 1), over all 35,553 weights:
#   - all but ~10 elements agree within 1e-6 (99.9th percentile 5e-7);
#   - the worst, embedding0.table[17, 0] (gradient -4.5e-8 on step 2, zero on
#     steps 1 and 3), differs by 4.8e-5 (TF vs the others; JAX and torch match a
#     float64 run to 1e-7 there by luck of rounding).
# So two bounds: the bulk must agree to BULK_PARAM_ATOL (a wrong Adam variant, e.g.
# Keras' epsilon placement, moves ~9,000 weights by > 1e-5), and no weight may
# differ by more than 1% of the largest step's LR (3e-4, 6x the worst seen).
PARAM_ATOL = 3e-4
BULK_PARAM_ATOL = 2e-6
BULK_QUANTILE = 0.999


@pytest.fixture(scope="module")
def weights():
    return model_spec.init_weights(seed=1)


@pytest.fixture(scope="module")
def data():
    arrays = load_dataset(load_suite().task(TASK))
    inputs = {name: value[:SAMPLES] for name, value in model_inputs(arrays, "train").items()}
    return inputs, labels(arrays, "train")[:SAMPLES]


@pytest.fixture(scope="module", params=MODES)
def impls(request, weights):
    """{framework: implementation} in one mode, loaded with `weights`."""
    return request.param, {fw: build(TASK, fw, request.param, weights) for fw in FRAMEWORKS}


def test_forward_outputs_agree(impls, weights, data):
    """The three frameworks' logits and ONNX Runtime's (inference only, built here: no compile to share)."""
    mode, frameworks = impls
    batch = {name: value[:PREDICT_ROWS] for name, value in data[0].items()}
    served = {fw: build(TASK, fw, mode, weights) for fw in INFERENCE_ONLY_FRAMEWORKS}
    outputs = predict_all({**frameworks, **served}, weights, batch)
    assert set(outputs) == set(FRAMEWORKS) | set(INFERENCE_ONLY_FRAMEWORKS)
    assert all(out.shape == (PREDICT_ROWS,) and out.dtype == np.float32 for out in outputs.values())
    assert_close_across(f"{mode} forward logits", outputs, FORWARD_ATOL)


def test_perturbed_weight_breaks_forward_equivalence(impls, weights, data):
    """A test of the test: one kernel element off by 1e-2 in one framework must be caught."""
    _, frameworks = impls
    batch = {name: value[:PREDICT_ROWS] for name, value in data[0].items()}
    perturbed = {name: value.copy() for name, value in weights.items()}
    perturbed["top.dense1.kernel"][0, 0] += 1e-2  # scales hidden unit 0's share of every logit
    outputs = predict_all(frameworks, weights, batch, override={PERTURBED: perturbed})
    with pytest.raises(AssertionError, match="forward logits"):
        assert_close_across("forward logits", outputs, FORWARD_ATOL)
    for fw in INFERENCE_ONLY_FRAMEWORKS:  # ONNX Runtime's graph on the perturbed weights: caught too
        served = predict_all({fw: build(TASK, fw, "compiled", perturbed)}, perturbed, batch)
        with pytest.raises(AssertionError, match=fw):
            assert_close_across("forward logits", {**predict_all(frameworks, weights, batch), **served}, FORWARD_ATOL)


def test_three_adam_steps_agree(impls, weights, data):
    mode, frameworks = impls
    inputs, y = data
    batches = batch_order(seed=3, epoch=0, num_samples=SAMPLES, batch_size=BATCH)[: len(LEARNING_RATES)]
    results = train_all(frameworks, weights, inputs, y, batches, LEARNING_RATES)  # each load resets Adam's moments
    for fw, (losses, _) in results.items():
        assert losses.shape == (len(LEARNING_RATES),) and losses.dtype == np.float32, (fw, mode)
    assert_training_equivalent(results, LOSS_ATOL, PARAM_ATOL)
    for a, b in itertools.combinations(results, 2):
        diffs = np.concatenate([np.abs(results[a][1][n] - results[b][1][n]).ravel() for n in model_spec.TRAINABLE])
        bulk = float(np.quantile(diffs, BULK_QUANTILE))
        assert bulk <= BULK_PARAM_ATOL, (
            f"{mode}: {BULK_QUANTILE:.1%} quantile of weight diffs {bulk:.3g} ({a} vs {b}) "
            f"exceeds {BULK_PARAM_ATOL:.3g}; {int(np.sum(diffs > BULK_PARAM_ATOL))} weights off"
        )

    # Embedding rows no batch gathered have exactly zero gradient in every framework
    # (dense gradients, not sparse updates), so Adam's update 0 / (0 + eps) leaves them
    # bit-identical to the initial weights; every other touched weight moved.
    sparse = inputs["sparse"][batches.ravel()]  # [steps * BATCH, fields]
    for f in range(model_spec.NUM_FIELDS):
        name = f"embedding{f}.table"
        untouched = np.setdiff1d(np.arange(model_spec.CARDINALITIES[f]), sparse[:, f])
        for fw, (_, exported) in results.items():
            np.testing.assert_array_equal(exported[name][untouched], weights[name][untouched], err_msg=fw)
            touched = np.unique(sparse[:, f])
            assert np.all(exported[name][touched] != weights[name][touched]), (fw, name)
