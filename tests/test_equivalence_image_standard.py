"""image-resnet50-standard: PyTorch, TensorFlow and JAX agree on logits and SGD steps, at a reduced size.

    .venv/bin/python -m pytest tests/test_equivalence_image_standard.py -q

The full network (25.6 M parameters, 4 GFLOP per 224x224 image) three times
over, compiled, is too slow for CI, so the network is this task's code path at
SMALL (the spec override `SPEC.resized`): a 32x32 crop of 40x40 images from the
task's own generator, stem width 8, one bottleneck per stage of widths 4, 8, 8,
16 (so every kind of block and projection is there: stride 1 and 2, the max
pool, the head), 1000 classes, a batch of 8. The training batches come through
each framework's own input pipeline (DataLoader, tf.data, the JAX prefetcher),
so a step here also proves the three pipelines feed the same batch.

Tolerances are fmnist-resnet's (tests/test_equivalence_fmnist_resnet.py says
how they were set and why the learning rates are small: at ~0.1 a ReLU kink
crossed on one side in one framework puts 1e-4..1e-2 between them after a few
steps, at random): FORWARD_ATOL on eval-mode logits, LOSS_ATOL per step,
PARAM_ATOL on every weight and BN statistic after 3 steps, torch's unbiased
running variance mapped onto the biased one as there. Eager mode joins the
forward comparison. The full size is tested by its parameter count
(tests/test_image_standard.py). About 50 s on this CPU, most of it compiling.

bf16 (rules 1.2: fmnist-resnet's mixed precision, inherited: torch.autocast,
Keras' mixed_bfloat16 policy, Flax's dtype with float32 params; float32
weights, momentum buffers and batch-norm statistics): one SGD step of each
framework in bf16, through its pipeline, against the others and against JAX's
fp32 step, same weights and batch, at BF16 (3x the worst seen on this 2-core
CPU, compiled, 4 data and weight seeds, 2026-11-28; worst in brackets; torch's
running variance mapped as above): the loss within 5e-2 [1.61e-2: PyTorch's
bf16 against fp32, 0.23% of a loss of about ln 1000], every weight and BN
statistic within 5e-2 [1.69e-2, a running variance], and 99% of them within
1.2e-3 [3.82e-4]. The worst are the batch-norm running variances, which
average bfloat16 activations over as few as 32 values (stage 4: 2 x 2 pixels
x 8 images). TensorFlow and JAX (both XLA) stay closer to each other (loss
1.6e-3, every weight 9.5e-4). The fp32 tolerances reject every framework's
bf16 step, so it is no fp32 step in disguise.
"""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import (
    FRAMEWORKS,
    INFERENCE_ONLY_FRAMEWORKS,
    PERTURBED,
    assert_close_across,
    assert_fp32_tolerances_reject,
    assert_mixed_step_agrees,
    assert_training_equivalent,
    one_step_each,
    predict_all,
    reduced_runs,
    torch_var_as_biased,
    worst_pair,
)

from levelfield.ground.registry import load_implementation
from levelfield.reference.image_resnet50_standard.common.augment import WORKERS_ENV
from levelfield.reference.image_resnet50_standard.common.dataset import generate
from levelfield.reference.image_resnet50_standard.common.inputs import centre_crop, labels
from levelfield.reference.image_resnet50_standard.common.model_spec import BN_DECAY, SPEC
from levelfield.reference.interface import COMPILED, EAGER, Recipe
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

TASK = "image-resnet50-standard"
SMALL = SPEC.resized(image_size=32, stem_width=8, stage_blocks=(1, 1, 1, 1), stage_widths=(4, 8, 8, 16))
STORED = 40  # the reduced stored size: random 32x32 crops of it, as 224 of 256
FORWARD_ATOL = 1e-5
LOSS_ATOL = 5e-6
PARAM_ATOL = 1e-5
BATCH = 8
STEPS = 3
LEARNING_RATES = np.array([2e-3, 5e-4, 1e-3])  # fmnist-resnet's: small, see its test
BF16 = {"loss_atol": 5e-2, "param_atol": 5e-2, "bulk_atol": 1.2e-3, "quantile": 0.99}  # bf16: see the docstring


@pytest.fixture(scope="module")
def arrays():
    params = {**load_suite("1.1").task(TASK).dataset["params"], "image_size": STORED, "patch_size": 24}
    return generate({**params, "train_samples": 64, "eval_samples": BATCH})


@pytest.fixture(scope="module")
def impls():
    """{framework: the task's implementation at SMALL, compiled}, built once (compiling is the slow part).

    Their pipelines build batches in this process (0 workers): a DataLoader would fork this process, which
    holds JAX's and TensorFlow's threads (a fork can deadlock there; `levelfield train` runs one framework
    per process). tests/test_image_standard.py runs every pipeline with workers, against these batches."""
    recipe = Recipe.from_task(load_suite("1.1").task(TASK), global_batch_size=32)
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WORKERS_ENV, "0")
        for fw in FRAMEWORKS:
            cls = load_implementation(TASK, fw)
            out[fw] = type(f"Reduced{cls.__name__}", (cls,), {"spec": SMALL})(recipe, mode=COMPILED)
    assert {impl.input_workers for impl in out.values()} == {0}
    return out


def forward_weights() -> dict[str, np.ndarray]:
    """Initial weights with varied BN scale / bias and running statistics, so eval mode tests every part."""
    weights = SMALL.init_weights(3)
    rng = np.random.default_rng(4)
    for name, value in weights.items():
        part = name.rsplit(".", 1)[1]
        if part == "scale":
            weights[name] = rng.uniform(0.7, 1.3, value.shape).astype(np.float32)
        elif part in ("bias", "mean") and not name.startswith("head."):
            weights[name] = rng.normal(0.0, 0.1, value.shape).astype(np.float32)
        elif part == "var":
            weights[name] = rng.uniform(0.5, 2.0, value.shape).astype(np.float32)
    return weights


def test_the_reduced_network_is_the_task_s_code_path_at_smaller_sizes():
    assert (SPEC.image_size, SPEC.stage_blocks, SPEC.stage_widths, SPEC.expansion) == (
        224,
        (3, 4, 6, 3),
        (64, 128, 256, 512),
        4,
    )
    assert [b[3] for b in SMALL.blocks()] == [1, 2, 2, 2] and SMALL.num_classes == 1000
    assert any(name.endswith("proj.kernel") for name in SMALL.parameter_shapes)


def test_forward_logits_agree(impls, arrays):
    images = np.ascontiguousarray(centre_crop(arrays["eval_images"], SMALL.image_size))  # uint8, as predict gets
    outputs = predict_all(impls, forward_weights(), {"images": images})
    assert all(o.shape == (BATCH, 1000) and o.dtype == np.float32 for o in outputs.values())
    assert np.abs(outputs["jax"]).max() > 0.1  # logits of some size: a tolerance of 1e-5 means something
    assert_close_across("eval-mode logits", outputs, FORWARD_ATOL)


def test_eager_mode_gives_the_compiled_logits(impls, arrays):
    """Every task runs compiled and eager: the eager implementations' logits join the compiled ones."""
    recipe = Recipe.from_task(load_suite("1.1").task(TASK), global_batch_size=32)
    images = np.ascontiguousarray(centre_crop(arrays["eval_images"], SMALL.image_size))
    eager = {}
    for fw in FRAMEWORKS:
        cls = load_implementation(TASK, fw)
        eager[f"{fw} eager"] = type(f"Reduced{cls.__name__}", (cls,), {"spec": SMALL})(recipe, mode=EAGER)
    outputs = {
        **predict_all(impls, forward_weights(), {"images": images}),
        **predict_all(eager, forward_weights(), {"images": images}),
    }
    assert_close_across("eval-mode logits, compiled and eager", outputs, FORWARD_ATOL)


@pytest.mark.parametrize("mode", [COMPILED, EAGER])
def test_inference_only_frameworks_give_the_same_logits(impls, arrays, mode):
    """ONNX Runtime (inference only) at SMALL, its graph optimised (compiled) or not (eager), normalising the
    uint8 crops inside its graph: the training frameworks' logits; a perturbed weight there is caught."""
    recipe = Recipe.from_task(load_suite("1.1").task(TASK), global_batch_size=32)
    images = np.ascontiguousarray(centre_crop(arrays["eval_images"], SMALL.image_size))
    served = {}
    for fw in INFERENCE_ONLY_FRAMEWORKS:
        cls = load_implementation(TASK, fw)
        served[fw] = type(f"Reduced{cls.__name__}", (cls,), {"spec": SMALL})(recipe, mode=mode)
    expected = predict_all(impls, forward_weights(), {"images": images})
    assert_close_across(
        "eval-mode logits", {**expected, **predict_all(served, forward_weights(), {"images": images})}, FORWARD_ATOL
    )
    perturbed = {k: v.copy() for k, v in forward_weights().items()}
    perturbed["stage2_block0.conv2.kernel"][1, 1, 2, 3] += 1e-2
    for fw, out in predict_all(served, perturbed, {"images": images}).items():
        with pytest.raises(AssertionError, match=fw):
            assert_close_across("eval-mode logits", {**expected, fw: out}, FORWARD_ATOL)


def test_perturbed_weight_breaks_forward_equivalence(impls, arrays):
    """A test of the test: 1e-2 on one element of one framework's head must be caught."""
    weights = forward_weights()
    perturbed = {k: v.copy() for k, v in weights.items()}
    perturbed["head.bias"][int(labels(arrays, "eval")[0])] += 1e-2
    images = np.ascontiguousarray(centre_crop(arrays["eval_images"], SMALL.image_size))
    outputs = predict_all(impls, weights, {"images": images}, override={PERTURBED: perturbed})
    with pytest.raises(AssertionError, match=PERTURBED):
        assert_close_across("eval-mode logits", outputs, FORWARD_ATOL)


def bn_rows_per_batch(batch: int) -> dict[str, int]:
    """BN layer prefix -> n = batch x H x W, the sample count of its batch statistics at SMALL."""
    size = -(-SMALL.image_size // 2)  # the 7x7 stride-2 stem conv, pad 3
    rows = {"stem.bn": batch * size * size}
    size = -(-size // 2)  # the 3x3 stride-2 max pool, pad 1
    for name, _, _, stride in SMALL.blocks():
        rows[f"{name}.bn1"] = batch * size * size  # the 1x1 conv before the stride
        size = -(-size // stride)
        for bn in ("bn2", "bn3", "proj_bn"):
            rows[f"{name}.{bn}"] = batch * size * size
    return rows


def test_three_sgd_steps_through_each_pipeline_agree(impls, arrays):
    initial = SMALL.init_weights(0)
    train = {"images": arrays["train_images"]}  # uint8 [64, 40, 40, 3]: each pipeline crops and flips it
    y = labels(arrays, "train")
    batches = batch_order(seed=8, epoch=1, num_samples=len(y), batch_size=BATCH)[:STEPS]
    results = {}
    for fw, impl in impls.items():
        impl.load({k: v.copy() for k, v in initial.items()})
        impl.set_train_data(train, y)
        losses = impl.train_steps(batches, LEARNING_RATES)
        assert losses.shape == (STEPS,) and losses.dtype == np.float32
        results[fw] = (losses, impl.export())
    moved = [n for n in SMALL.parameter_shapes if not np.array_equal(results["jax"][1][n], initial[n])]
    assert len(moved) == len(SMALL.parameter_shapes)  # every weight and running statistic moved
    losses, torch_weights = results["pytorch"]
    raw_gap, _ = worst_pair(
        {"pytorch": torch_weights["stage4_block0.bn1.var"], "jax": results["jax"][1]["stage4_block0.bn1.var"]}
    )
    assert raw_gap > 10 * PARAM_ATOL, raw_gap  # the correction matters (n = 8 x 2 x 2 there)
    results["pytorch"] = (
        losses,
        torch_var_as_biased(torch_weights, initial, bn_rows_per_batch(BATCH), BN_DECAY**STEPS),
    )
    assert_training_equivalent(results, loss_atol=LOSS_ATOL, param_atol=PARAM_ATOL)


def test_label_smoothing_is_what_every_framework_configured(impls):
    for fw, impl in impls.items():
        values = impl.hyperparameters()
        assert (values["loss"], values["label_smoothing"]) == ("softmax_cross_entropy", 0.1), fw


def test_one_bf16_sgd_step_through_each_pipeline_agrees_across_frameworks_and_with_fp32(impls, arrays):
    """Rules 1.2's bf16 (each framework's mixed precision) against fp32, one step: see the module docstring."""
    initial = SMALL.init_weights(0)
    train = {"images": arrays["train_images"]}
    y = labels(arrays, "train")
    batches = batch_order(seed=8, epoch=1, num_samples=len(y), batch_size=BATCH)[:1]
    bf16 = Recipe.from_task(load_suite("1.2").task(TASK), global_batch_size=32, precision="bf16")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WORKERS_ENV, "0")  # the pipelines in this process, as the fp32 fixture's
        runs = {**reduced_runs(TASK, bf16, {"spec": SMALL}), "jax fp32": impls["jax"]}

    rows = bn_rows_per_batch(BATCH)  # PyTorch's running variance as the biased one, after one step (BN_DECAY**1)

    def biased(name: str, exported: dict) -> dict:
        return torch_var_as_biased(exported, initial, rows, BN_DECAY) if name.startswith("pytorch") else exported

    results = one_step_each(runs, initial, train, y, batches, LEARNING_RATES[:1], biased)
    assert_mixed_step_agrees(results, **BF16)
    assert_fp32_tolerances_reject(results, "bf16", "jax fp32", LOSS_ATOL, PARAM_ATOL)
