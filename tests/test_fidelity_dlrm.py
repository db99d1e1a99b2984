"""ctr-dlrm-standard's fidelity gate (rules 1.2) at reduced tables: the float64 numpy DLRM equals every
framework's, bf16 is what runs and stays within its tolerance, and planted broken implementations fail.

    .venv/bin/python -m pytest tests/test_fidelity_dlrm.py -q

The rig (tests/fidelity_rig.py) is MLPerf's DLRM at every width with each table capped at 512 rows, the
task's weights generator (dlrm-fidelity-v1) calibrated on 1,024 generated rows, its float64 reference
probabilities for 1,024 others. Tolerances, measured on this 2-core CPU (worst framework in brackets):
- FORWARD_ATOL 1e-4 on logits (standard deviation 1.5, by the generator) against the float64 network
  [9e-6, JAX]: sums of up to 1,024 terms of unit size.
- BF16_ATOL 0.5 [0.26, TensorFlow eager]; every framework's bf16 logits lie more than 10 x FORWARD_ATOL
  away (the low precision ran).
Cost: ~40 s.
"""

from __future__ import annotations

import numpy as np
import pytest
from fidelity_rig import assert_within_precision, dlrm_rig, skip_unless_tested

from levelfield.reference.ctr_dlrm.common.numpy_forward import forward

FORWARD_ATOL = 1e-4
BF16_ATOL = 0.5


@pytest.fixture(scope="module")
def rig():
    return dlrm_rig()


@pytest.fixture(scope="module")
def reference_logits(rig):
    return forward(rig.spec, rig.weights, rig.inputs["dense"], rig.inputs["sparse"])


def test_the_reference_depends_on_the_input(rig):
    p = rig.reference["scores_array"]
    assert np.std(p) > 0.15 and 0.2 < np.mean(p > 0.5) < 0.8


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_logits_are_the_float64_network_s_and_pass_the_gate(rig, reference_logits, precision):
    for fw in rig.frameworks(precision):
        impl = rig.implementation(fw, precision)
        assert impl.hyperparameters()["precision"] == precision, fw  # read back from the framework's objects
        logits = impl.predict(rig.inputs)
        assert_within_precision(float(np.abs(logits - reference_logits).max()), precision, FORWARD_ATOL, BF16_ATOL, fw)
        assert rig.agreement(logits, precision) >= rig.threshold(precision), (fw, precision)


def skipped_layer(weights: dict) -> dict:
    """top.dense1 (1024 -> 1024, after a ReLU) skipped: an identity kernel and a zero bias give relu(x) = x."""
    edited = {k: v.copy() for k, v in weights.items()}
    edited["top.dense1.kernel"] = np.eye(1024, dtype=np.float32)
    edited["top.dense1.bias"][:] = 0.0
    return edited


def transposed_kernel(weights: dict) -> dict:
    edited = {k: v.copy() for k, v in weights.items()}
    edited["top.dense1.kernel"] = np.ascontiguousarray(weights["top.dense1.kernel"].T)
    return edited


@pytest.mark.parametrize(
    "break_name, framework",
    [("constant", "pytorch"), ("skipped layer", "tensorflow"), ("transposed kernel", "jax"), ("log dense", "pytorch")],
)
def test_a_broken_implementation_fails_the_gate(rig, break_name, framework):
    skip_unless_tested(framework)
    edit = {"skipped layer": skipped_layer, "transposed kernel": transposed_kernel}.get(break_name)
    inputs = rig.inputs
    if break_name == "log dense":  # Criteo's log(1 + x) applied to dense features the generator already scaled
        inputs = {**inputs, "dense": np.log1p(inputs["dense"]).astype(np.float32)}
    outputs = rig.eager_predict(framework, edit(rig.weights) if edit else rig.weights, inputs)
    rig.assert_fails_the_gate(np.zeros_like(outputs) if break_name == "constant" else outputs, break_name)
