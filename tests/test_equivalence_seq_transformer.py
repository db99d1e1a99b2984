"""seq-transformer: PyTorch, TensorFlow and JAX compute the same network and the same AdamW steps.

    .venv/bin/python -m pytest tests/test_equivalence_seq_transformer.py -q

For each mode (compiled, eager): the same neutral weights and batch give the
same logits in the three frameworks and in ONNX Runtime (inference only: its
graph written from the same weights) (on "spread" weights, far from init, so that activations are O(1)
and a wrong GELU form, LayerNorm epsilon or attention scale shows); 3 AdamW
steps from the real init with a different learning rate each give the same
losses and the same updated weights. A perturbed weight in one framework must
break the forward check (a test of the test). Each framework compiles once per
mode: results are module-scoped fixtures shared by the tests that read them.
"""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import INFERENCE_FRAMEWORKS, assert_close_across, forward_outputs, spread_weights, training_results

from levelfield.reference.interface import MODES
from levelfield.reference.schedule import batch_order
from levelfield.reference.seq_transformer.common.model_spec import PARAMETER_SHAPES, init_weights

TASK = "seq-transformer"
INIT_WEIGHTS = init_weights(seed=0)


FORWARD_WEIGHTS = spread_weights(PARAMETER_SHAPES, seed=1)
_TOKENS = np.random.default_rng(20261122).integers(0, 10, size=(64, 12)).astype(np.int32)
INPUTS = {"tokens": _TOKENS}  # int32 [64, 12]
LABELS = np.sort(_TOKENS, axis=1).astype(np.int64)  # int64 [64, 12]
BATCH_INDICES = batch_order(seed=3, epoch=0, num_samples=64, batch_size=16)[:3]  # int64 [3, 16]
# Realistic rates (the rules' peak is 1e-3), different every step.
LRS = np.array([1e-3, 3e-4, 2e-3])

# Logits on FORWARD_WEIGHTS: fp32, |logit| up to ~6 (mean 1.2); kernels differ only in summation
# order (oneDNN / Eigen / XLA), observed max diff 4.5e-6 (~1e-6 relative). 2e-5 leaves 4x margin
# and is 50x below the effect of tanh-approximate GELU (1e-3) or of the perturbation test (~1e-2).
LOGITS_ATOL = 2e-5
# Losses ~2.3 (ulp 2.4e-7): observed max diff 7e-7 over 3 steps.
LOSS_ATOL = 1e-5
# Weights after 3 steps: each moves by ~sum(LRS) = 3.3e-3. Adam divides m by sqrt(v), so rounding
# differences in tiny gradients become visible: the q/k kernels' gradients at init are ~1e-7
# (near-uniform attention), observed max diff 1.1e-6, i.e. 3e-4 of the update. 5e-6 < 0.2% of it.
WEIGHT_ATOL = 5e-6
# The key biases' gradient is exactly zero in exact arithmetic (adding q.b_k shifts every score of
# a query equally; softmax ignores it), so their float gradients are round-off noise ~1e-10 and
# Adam turns noise into updates of lr * g / eps ~ 1e-5 with framework-dependent sign; observed
# max diff 9e-6. 5e-5 is still 1.5% of an lr-sized step, so a real update (wrong mapping, sparse
# vs dense handling) is caught.
KEY_BIAS_ATOL = 5e-5


def weight_atol(name: str) -> float:
    return KEY_BIAS_ATOL if name.endswith(".attention.key.bias") else WEIGHT_ATOL


@pytest.fixture(scope="module", params=MODES)
def mode(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def logits(mode) -> dict[str, np.ndarray]:
    """Every framework's logits, ONNX Runtime's (inference only) among them."""
    return forward_outputs(TASK, FORWARD_WEIGHTS, INPUTS, mode, frameworks=INFERENCE_FRAMEWORKS)


@pytest.fixture(scope="module")
def trained(mode) -> dict[str, tuple[np.ndarray, dict]]:
    return training_results(TASK, INIT_WEIGHTS, INPUTS, LABELS, BATCH_INDICES, LRS, mode)


def test_forward_outputs_agree(logits):
    for fw, out in logits.items():
        assert out.shape == (64, 12, 10) and out.dtype == np.float32, (fw, out.shape, out.dtype)
    assert_close_across("logits", logits, LOGITS_ATOL)


def test_training_losses_agree(trained):
    losses = {fw: r[0] for fw, r in trained.items()}
    for fw, value in losses.items():
        assert value.shape == (3,) and value.dtype == np.float32, (fw, value.shape, value.dtype)
        assert np.all(np.isfinite(value)), (fw, value)
    # Step 0 is the loss at init: ln(10) = 2.303 for near-uniform logits.
    assert abs(float(losses["pytorch"][0]) - np.log(10)) < 0.05, losses
    assert_close_across("training loss per step", losses, LOSS_ATOL)


def test_updated_weights_agree(trained):
    exported = {fw: r[1] for fw, r in trained.items()}
    for fw, weights in exported.items():
        assert set(weights) == set(PARAMETER_SHAPES), fw
    for name in PARAMETER_SHAPES:
        values = {fw: weights[name] for fw, weights in exported.items()}
        # Every weight must have moved: all of them are decayed and receive gradient.
        if not name.endswith(".attention.key.bias"):  # zero at init and (nearly) zero gradient
            moved = float(np.max(np.abs(values["pytorch"] - INIT_WEIGHTS[name])))
            assert moved > 1e-4, f"{name} moved only {moved:.3g} in 3 steps"
        assert_close_across(f"weight {name} after 3 steps", values, weight_atol(name))


@pytest.mark.parametrize("framework", INFERENCE_FRAMEWORKS)
def test_a_perturbed_weight_breaks_forward_equivalence(logits, mode, framework):
    if mode != "eager":
        pytest.skip("one mode suffices for this test of the test; eager builds are cheap")
    perturbed = {name: value.copy() for name, value in FORWARD_WEIGHTS.items()}
    perturbed["layer1.mlp.dense2.kernel"][5, 7] += 1e-2
    changed = forward_outputs(TASK, perturbed, INPUTS, mode, frameworks=(framework,))
    with pytest.raises(AssertionError, match="logits"):
        assert_close_across("logits", {**logits, **changed}, LOGITS_ATOL)
