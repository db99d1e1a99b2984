"""seq-transformer-standard's fidelity gate (rules 1.2) at a reduced size: the float64 numpy encoder equals
every framework's, bf16 is what runs and stays within its tolerance, and planted broken implementations fail.

    .venv/bin/python -m pytest tests/test_fidelity_encoder.py -q

The rig (tests/fidelity_rig.py) is the BERT-base-sized encoder's code path at 2 layers, d_model 64, 4
heads, a 512-token vocabulary and 32 tokens, the task's weights generator (encoder-fidelity-v1) calibrated
on 8 generated sequences, its float64 reference at the masked positions of 16 others. Logits (every
position) come from eager predicts answering logits (`predict_argmax` off); the gate scores the compiled
predict's token ids (bf16). Tolerances, measured on this 2-core CPU (worst framework in brackets):
- FORWARD_ATOL 2e-5 on logits (|logit| < 4) against the float64 network [2.5e-6], seq-transformer's.
- BF16_ATOL 0.25 [0.079, TensorFlow eager]; every framework's bf16 logits lie more than 10 x FORWARD_ATOL
  away (the low precision ran).
Cost: ~25 s.
"""

from __future__ import annotations

import numpy as np
import pytest
from fidelity_rig import assert_within_precision, encoder_rig, skip_unless_tested

from levelfield.reference.seq_transformer.common.numpy_forward import encode, head

FORWARD_ATOL = 2e-5
BF16_ATOL = 0.25


@pytest.fixture(scope="module")
def rig():
    return encoder_rig()


@pytest.fixture(scope="module")
def reference_logits(rig):
    return head(rig.weights, encode(rig.spec, rig.weights, rig.inputs["tokens"]))  # every position


def test_the_reference_depends_on_the_context(rig):
    """Every masked position holds the same input token: what differs between them is the context."""
    candidates = rig.reference["classes_array"][:, 0]
    assert len(np.unique(candidates)) > len(candidates) // 2


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_logits_are_the_float64_network_s_within_the_precision_s_tolerance(rig, reference_logits, precision):
    for fw in rig.frameworks(precision):
        impl = rig.implementation(fw, precision, mode="eager", predict_argmax=False)
        assert impl.hyperparameters()["precision"] == precision, fw  # read back from the framework's objects
        worst = float(np.abs(impl.predict(rig.inputs) - reference_logits).max())
        assert_within_precision(worst, precision, FORWARD_ATOL, BF16_ATOL, fw)


def test_the_compiled_bf16_token_ids_pass_the_gate(rig):
    """What an accuracy run scores: token ids from the compiled predict (fp32's are measured at full size
    over the gate set, rules 1.2 inference.fidelity.measured)."""
    for fw in rig.frameworks("bf16"):
        tokens = rig.implementation(fw, "bf16").predict(rig.inputs)
        assert rig.agreement(tokens, "bf16") >= rig.threshold("bf16"), fw


def skipped_layer(weights: dict) -> dict:
    """layer1 skipped: both residual branches output 0 (the attention output and MLP dense2 zeroed)."""
    edited = {k: v.copy() for k, v in weights.items()}
    for name in ("layer1.attention.output", "layer1.mlp.dense2"):
        edited[f"{name}.kernel"][:] = 0.0
        edited[f"{name}.bias"][:] = 0.0
    return edited


def transposed_query(weights: dict) -> dict:
    edited = {k: v.copy() for k, v in weights.items()}
    edited["layer0.attention.query.kernel"] = np.ascontiguousarray(weights["layer0.attention.query.kernel"].T)
    return edited


@pytest.mark.parametrize(
    "break_name, framework",
    [("constant", "jax"), ("skipped layer", "pytorch"), ("transposed kernel", "jax"), ("shifted tokens", "tensorflow")],
)
def test_a_broken_implementation_fails_the_gate(rig, break_name, framework):
    skip_unless_tested(framework)
    edit = {"skipped layer": skipped_layer, "transposed kernel": transposed_query}.get(break_name)
    inputs = rig.inputs
    if break_name == "shifted tokens":  # a wrong vocabulary mapping: every id one off (the mask token kept)
        tokens = inputs["tokens"]
        inputs = {"tokens": np.where(tokens == 0, 0, tokens % (rig.spec.vocab_size - 1) + 1).astype(np.int32)}
    outputs = rig.eager_predict(framework, edit(rig.weights) if edit else rig.weights, inputs)
    rig.assert_fails_the_gate(np.zeros_like(outputs) if break_name == "constant" else outputs, break_name)
