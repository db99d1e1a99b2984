"""seq-transformer-standard: PyTorch, TensorFlow and JAX agree on logits, predicted tokens and AdamW steps,
at a reduced size.

    .venv/bin/python -m pytest tests/test_equivalence_seq_transformer_standard.py -q

The full model (132 M parameters, logits of 15 MiB a row) three times over is
too slow for CI, so the network is this task's code path at SMALL: 2 layers,
d_model 64, 4 heads, feed-forward 256, a 512-token vocabulary, 32 tokens (the
spec override `SPEC.resized`), on the task's own generator at those sizes.
Logits on "spread" weights (seq-transformer's test says why) are compared in
eager mode, where predict can answer logits; the task's compiled predict
answers token ids and must give the argmax of those logits; three AdamW steps
run compiled. Tolerances are seq-transformer's (tests/test_equivalence_seq_transformer.py
says how they were set); the test at full size is tests/test_standard_rules.py's parameter count.

bf16 (rules 1.2: mixed precision, each framework's idiom, float32 weights and
AdamW moments): one AdamW step of each framework in bf16 against the others
and against JAX's fp32 step, same weights and batch, at BF16 (measured on this
2-core CPU, compiled, 4 data and weight seeds, 2026-11-28; worst in
brackets): the loss within 5e-4 [1.37e-4, 3x], every weight within 2.5 lr
[1.99e-3 = 1.99 lr], and 99% of all weights within 1e-4 [2.8e-5, 3x]. AdamW's
first step moves every weight by about lr x sign(gradient), so a weight whose
gradient bf16 rounds across zero (the attention key biases' are round-off,
seq-transformer's test says why, and there are others near zero) moves the
other way: up to 2 lr apart, for between 0.1% and 1% of the weights (the
99.9th percentile of the differences reached 1.6e-3, the 99th 2.8e-5); the
bulk tolerance is what an update of the wrong size fails. The fp32 tolerances
reject every framework's bf16 step, so it is no fp32 step in disguise.
"""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import (
    FRAMEWORKS,
    INFERENCE_FRAMEWORKS,
    INFERENCE_ONLY_FRAMEWORKS,
    assert_close_across,
    assert_fp32_tolerances_reject,
    assert_mixed_step_agrees,
    one_step_each,
    reduced_runs,
    spread_weights,
    train_all,
)

from levelfield.ground.registry import load_implementation
from levelfield.reference.interface import COMPILED, EAGER, Recipe
from levelfield.reference.schedule import batch_order
from levelfield.reference.seq_transformer_standard.common.dataset import generate
from levelfield.reference.seq_transformer_standard.common.inputs import labels, model_inputs
from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC
from levelfield.rules import load_suite

TASK = "seq-transformer-standard"
SMALL = SPEC.resized(num_layers=2, d_model=64, num_heads=4, ff_dim=256, vocab_size=512, num_classes=512, seq_len=32)
SAMPLES = 64  # training rows placed in framework memory
BATCH = 4  # rows per step: a reduced batch (the rules' default is 256)
LRS = np.array([1e-3, 3e-4, 2e-3])  # different every step
LOGITS_ATOL = 2e-5
LOSS_ATOL = 1e-5
WEIGHT_ATOL = 5e-6
KEY_BIAS_ATOL = 5e-5  # the key bias' gradient is round-off noise that Adam scales up (seq-transformer's test)
# The token embedding after 3 AdamW steps: PyTorch and TensorFlow 5.0e-6 apart on the CI machine and 5.3e-6 here
# (2026-11-28/29), at WEIGHT_ATOL's edge; Adam divides each row's update by its own gradient's size, so the
# rows whose gradients are smallest carry their round-off into the update, as the key bias does, less so.
EMBEDDING_ATOL = 1e-5
BF16 = {"loss_atol": 5e-4, "param_atol": 2.5 * LRS[0], "bulk_atol": 1e-4, "quantile": 0.99}  # see the docstring


@pytest.fixture(scope="module")
def task():
    return load_suite("1.1").task(TASK)


@pytest.fixture(scope="module")
def data(task):
    params = {**task.dataset["params"], "vocab_size": SMALL.vocab_size, "seq_len": SMALL.seq_len}
    arrays = generate({**params, "train_samples": SAMPLES, "eval_samples": 16})
    return model_inputs(arrays, "train"), labels(arrays, "train")


def reduced(framework: str, mode: str, predict_argmax: bool, task):
    cls = load_implementation(TASK, framework)
    overrides = {"spec": SMALL, "predict_argmax": predict_argmax}  # the test's spec override
    return type(f"Reduced{cls.__name__}", (cls,), overrides)(Recipe.from_task(task), mode=mode)


@pytest.fixture(scope="module")
def compiled(task):
    """{framework: the task's implementation, compiled, at SMALL}: predict answers token ids."""
    return {fw: reduced(fw, COMPILED, True, task) for fw in FRAMEWORKS}


@pytest.fixture(scope="module")
def served(task):
    """{inference-only framework (ONNX Runtime): its implementation at SMALL, graph optimised}: token ids."""
    return {fw: reduced(fw, COMPILED, True, task) for fw in INFERENCE_ONLY_FRAMEWORKS}


@pytest.fixture(scope="module")
def logits(task, data):
    """{framework: eager logits [16, 32, 512] on spread weights}, ONNX Runtime's (unoptimised graph) among them."""
    out = {}
    for fw in INFERENCE_FRAMEWORKS:
        impl = reduced(fw, EAGER, False, task)
        impl.load(spread_weights(SMALL.parameter_shapes, seed=1))
        out[fw] = impl.predict({"tokens": data[0]["tokens"][:16]})
    return out


def test_the_reduced_network_is_the_task_s_code_path_at_smaller_sizes():
    assert (SPEC.num_layers, SPEC.d_model, SPEC.num_heads, SPEC.ff_dim) == (12, 768, 12, 3072)
    assert (SMALL.task_id, SMALL.head_dim, SMALL.num_classes) == (TASK, 16, 512)


def test_forward_logits_agree(logits):
    for fw, out in logits.items():
        assert out.shape == (16, SMALL.seq_len, SMALL.num_classes) and out.dtype == np.float32, fw
    assert_close_across("logits", logits, LOGITS_ATOL)


def test_a_perturbed_logit_is_caught(logits):
    """A test of the test: one framework's logit off by 1e-3 must fail the comparison."""
    moved = {**logits, "jax": logits["jax"].copy()}
    moved["jax"][0, 0, 0] += 1e-3
    with pytest.raises(AssertionError, match="logits"):
        assert_close_across("logits", moved, LOGITS_ATOL)


def test_compiled_predict_answers_the_argmax_token_ids(compiled, served, logits, data):
    tokens = {"tokens": data[0]["tokens"][:16]}
    for fw, impl in {**compiled, **served}.items():
        impl.load(spread_weights(SMALL.parameter_shapes, seed=1))
        ids = impl.predict(tokens)
        assert ids.shape == (16, SMALL.seq_len) and ids.dtype == np.int32, (fw, ids.shape, ids.dtype)
        np.testing.assert_array_equal(ids, np.argmax(logits[fw], axis=-1), err_msg=fw)


def test_three_adamw_steps_agree(compiled, data):
    inputs, y = data
    init = SMALL.init_weights(seed=0)
    batches = batch_order(seed=3, epoch=0, num_samples=SAMPLES, batch_size=BATCH)[: len(LRS)]
    results = train_all(compiled, init, inputs, y, batches, LRS)
    losses = {fw: r[0] for fw, r in results.items()}
    assert all(v.shape == (3,) and v.dtype == np.float32 for v in losses.values()), losses
    assert abs(float(losses["pytorch"][0]) - np.log(SMALL.num_classes)) < 0.05, losses  # near-uniform at init
    assert_close_across("training loss per step", losses, LOSS_ATOL)
    for name in SMALL.parameter_shapes:
        atol = KEY_BIAS_ATOL if name.endswith(".attention.key.bias") else WEIGHT_ATOL
        atol = EMBEDDING_ATOL if name == "token_embedding.embedding" else atol
        assert_close_across(f"weight {name} after 3 steps", {fw: r[1][name] for fw, r in results.items()}, atol)


def test_hyperparameters_are_the_rules_bert_recipe(compiled, task):
    fixed = task.hyperparameters["fixed"]
    for fw, impl in compiled.items():
        impl.load(SMALL.init_weights(seed=2))  # the optimizer state holds them: a load starts it
        logged = impl.hyperparameters()
        assert {name: logged[name] for name in fixed} == fixed, fw


def test_one_bf16_adamw_step_agrees_across_frameworks_and_with_fp32(compiled, data):
    """Rules 1.2's bf16 (each framework's mixed precision) against fp32, one step: see the module docstring."""
    inputs, y = data
    init = SMALL.init_weights(seed=0)
    batches = batch_order(seed=3, epoch=0, num_samples=SAMPLES, batch_size=BATCH)[:1]
    bf16 = Recipe.from_task(load_suite("1.2").task(TASK), precision="bf16")
    runs = {**reduced_runs(TASK, bf16, {"spec": SMALL, "predict_argmax": True}), "jax fp32": compiled["jax"]}
    results = one_step_each(runs, init, inputs, y, batches, LRS[:1])
    assert_mixed_step_agrees(results, **BF16)
    assert_fp32_tolerances_reject(results, "bf16", "jax fp32", LOSS_ATOL, WEIGHT_ATOL)
