"""fmnist-resnet: PyTorch, TensorFlow and JAX compute the same thing, in compiled and in eager mode.

    .venv/bin/python -m pytest tests/test_equivalence_fmnist_resnet.py -q

Same neutral weights + same batch => same logits; same weights + same batches +
the same per-step learning rates => same losses, weights and BN running
statistics after 3 SGD steps. One implementation per framework and mode is
built per module (compiling is the slow part) and reloaded between tests.

Tolerances (fp32 throughout; worst pair observed on this 2-core CPU over 8
data seeds in brackets):
- FORWARD_ATOL 1e-5 on eval-mode logits (|logit| ~1), pairwise among the three
  frameworks and a float64 numpy network: the frameworks run different conv /
  reduction kernels (oneDNN in torch and TF, XLA:CPU in JAX and under TF's
  jit, Inductor in compiled torch) whose summation orders differ [3.6e-7].
- LOSS_ATOL 5e-6 on per-step losses (~2.3, float32 ulp 2.4e-7) [2.4e-7; 5e-7 over seeds].
- PARAM_ATOL 1e-5 on every weight and BN buffer after 3 steps [5.4e-7; 2.2e-6 over seeds].
  Why the learning rates are small (2e-3, 5e-4, 1e-3): the loss gradient of a
  ReLU network jumps where a pre-activation crosses zero, and fp32 rounding
  differs between frameworks by ~1e-7, so with ~1.8M ReLU inputs per step of 32
  images some frameworks land on the other side of a kink (in float64 a weight
  noise of 1e-8 moves the gradient by ~2e-4, a noise of 1e-10 by 3e-10). At
  learning rates ~0.1 that puts 1e-4..2e-3 between frameworks after 3 steps, at
  random. The gap scales with lr while the semantics under test still show: lr
  inside the momentum buffer (Keras' SGD) moves weights by 3e-4 here, 30x
  PARAM_ATOL. Weight decay is too small to see in 3 such steps, so
  test_optimizer_update_matches_torch checks the configured optimizers alone.
Mixed precision (rules 1.1; each framework's idiom: torch.autocast, Keras'
mixed_bfloat16 / mixed_float16 policy, Flax dtype with float32 params; fp16
adds each one's dynamic loss scale). bfloat16 keeps 8 significant bits
(rounding up to 2^-8 = 3.9e-3 relative per cast), float16 11 (2^-11 = 4.9e-4),
so a logit ~1 after ~10 low-precision layers lands ~5e-3 (bf16) or ~8e-4
(fp16) from the float64 network. MIXED_ATOL holds one tolerance each, 3x the
worst seen on this 2-core CPU (compiled; 8 input seeds for the forward, 4 data
seeds for the 3 steps; worst in brackets):
- forward, each framework's eval-mode logits against the float64 numpy
  network: bf16 3e-2 [9.7e-3, jax; torch and TF 6.8e-3], fp16 3e-3 [1.05e-3].
- loss per step and param (weights and BN statistics after the same 3
  steps), pairwise among the three frameworks in that precision and JAX's
  fp32: bf16 2e-3 and 3e-3 [4.7e-4 and 9.8e-4], fp16 5e-4 and 5e-4 [1e-4 and
  1.3e-4]. The weights' worst is in the BN running statistics, which average
  low-precision activations; trainable weights move by lr x grad ~1e-4 and
  differ far less. No step overflowed (all three scalers start at 2^15).
The low precision must be what ran: each framework's logits differ from the
float64 network by more than 10 x FORWARD_ATOL (a run that silently stayed
fp32 fails), the fp32 tolerances reject the low-precision steps, and the
weights stay float32.
BN running variance: torch updates it with the unbiased batch variance
(n / (n - 1) times the biased one, n = batch x H x W of that layer), Flax and
Keras with the biased one, and none of the three can be switched. Since n is
the same every step, torch's value maps exactly onto the biased definition
(torch_var_as_biased below), after which the same PARAM_ATOL applies. Without
it the difference after 3 steps is ~2e-4 at batch 32 (block3, n = 1568); at the
rules' batch 256 it is < 3e-5 and moves eval logits by < 1e-5.
"""

from __future__ import annotations

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
    torch_var_as_biased,
    worst_pair,
)

from levelfield.ground.registry import load_implementation
from levelfield.reference.fmnist_resnet.common import model_spec as spec
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

TASK = "fmnist-resnet"
FORWARD_ATOL = 1e-5
LOSS_ATOL = 5e-6
PARAM_ATOL = 1e-5
# Mixed precision (rules 1.1), by precision: see the module docstring.
MIXED_ATOL = {
    "bf16": {"forward": 3e-2, "loss": 2e-3, "param": 3e-3},
    "fp16": {"forward": 3e-3, "loss": 5e-4, "param": 5e-4},
}

BATCH = 32  # training batch and predict batch (a power of two: one predict bucket)
STEPS = 3
LEARNING_RATES = np.array([2e-3, 5e-4, 1e-3])  # a different rate every step; small: see above
TRAIN_ROWS = 256


def random_images(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, spec.IMAGE_SIZE, spec.IMAGE_SIZE), dtype=np.float32)


def numpy_forward(weights: dict, images: np.ndarray, batch_stats: dict | None = None) -> np.ndarray:
    """float64 logits of resnet-small written from the model description alone (NHWC, HWIO).

    Eval mode uses the weights' running statistics; given a dict `batch_stats`,
    train mode normalizes with the batch's own statistics and records them there.
    """
    w = {name: value.astype(np.float64) for name, value in weights.items()}

    def conv(x, name, stride, pad):
        kernel = w[name]
        x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
        kh, kw = kernel.shape[:2]
        ho, wo = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
        return sum(
            np.einsum(
                "nhwc,co->nhwo",
                x[:, i : i + stride * (ho - 1) + 1 : stride, j : j + stride * (wo - 1) + 1 : stride],
                kernel[i, j],
            )
            for i in range(kh)
            for j in range(kw)
        )

    def bn(x, prefix):
        if batch_stats is None:
            mean, var = w[f"{prefix}.mean"], w[f"{prefix}.var"]
        else:
            mean, var = batch_stats[f"{prefix}.mean"], batch_stats[f"{prefix}.var"] = (
                x.mean((0, 1, 2)),
                x.var((0, 1, 2)),
            )
        return (x - mean) / np.sqrt(var + spec.BN_EPSILON) * w[f"{prefix}.scale"] + w[f"{prefix}.bias"]

    x = np.maximum(bn(conv(images[..., None], "stem.conv.kernel", 1, 1), "stem.bn"), 0)
    for name, _, stride in spec.BLOCKS:
        y = np.maximum(bn(conv(x, f"{name}.conv1.kernel", stride, 1), f"{name}.bn1"), 0)
        y = bn(conv(y, f"{name}.conv2.kernel", 1, 1), f"{name}.bn2")
        shortcut = bn(conv(x, f"{name}.proj.kernel", stride, 0), f"{name}.proj_bn") if f"{name}.proj.kernel" in w else x
        x = np.maximum(y + shortcut, 0)
    return x.mean(axis=(1, 2)) @ w["head.kernel"] + w["head.bias"]


def forward_weights() -> dict[str, np.ndarray]:
    """Initial weights with varied BN scale / bias and running statistics calibrated on 64 other images.

    Calibrated statistics keep (almost) every channel alive in eval mode; the
    default mean 0 / var 1 would leave many ReLUs off, and their kernels untested.
    """
    weights = spec.init_weights(3)
    rng = np.random.default_rng(4)
    for name, value in weights.items():
        if name.endswith(".scale"):
            weights[name] = rng.uniform(0.7, 1.3, value.shape).astype(np.float32)
        elif name.endswith(".bias"):
            weights[name] = rng.normal(0.0, 0.1, value.shape).astype(np.float32)
    stats = {}
    numpy_forward(weights, random_images(64, seed=10), batch_stats=stats)
    weights.update({name: value.astype(np.float32) for name, value in stats.items()})
    return weights


def bn_rows_per_batch(batch: int) -> dict[str, int]:
    """BN layer prefix -> n = batch x H x W, the sample count of its batch statistics."""
    size = spec.IMAGE_SIZE
    rows = {"stem.bn": batch * size * size}
    for name, _, stride in spec.BLOCKS:
        size = -(-size // stride)  # 3x3 conv, pad 1: ceil(size / stride)
        for bn in ("bn1", "bn2", "proj_bn"):
            rows[f"{name}.{bn}"] = batch * size * size
    return rows


@pytest.fixture(scope="module", params=["compiled", "eager"])
def impls(request):
    """{framework: implementation} for one mode, built once per module and mode."""
    return {fw: build(TASK, fw, request.param, spec.init_weights(0)) for fw in FRAMEWORKS}


def test_forward_logits_agree(impls):
    weights, images = forward_weights(), random_images(BATCH, seed=5)
    outputs = predict_all(impls, weights, {"images": images})
    assert all(o.shape == (BATCH, spec.NUM_CLASSES) and o.dtype == np.float32 for o in outputs.values())
    # The float64 numpy network joins the comparison: agreeing with each other is not enough.
    assert_close_across("eval-mode logits", {**outputs, "numpy float64": numpy_forward(weights, images)}, FORWARD_ATOL)


@pytest.fixture(scope="module", params=["compiled", "eager"])
def served(request):
    """{inference-only framework (ONNX Runtime): implementation} for one mode: the graph optimised or not."""
    return {fw: build(TASK, fw, request.param, spec.init_weights(0)) for fw in INFERENCE_ONLY_FRAMEWORKS}


def test_inference_only_frameworks_equal_the_numpy_network(served):
    """ONNX Runtime's logits on the same neutral weights: the float64 numpy network's (and so the training
    frameworks'), within FORWARD_ATOL; its running-statistics batch norm is what eval mode means."""
    weights, images = forward_weights(), random_images(BATCH, seed=5)
    outputs = predict_all(served, weights, {"images": images})
    assert all(o.shape == (BATCH, spec.NUM_CLASSES) and o.dtype == np.float32 for o in outputs.values())
    reference = numpy_forward(weights, images)
    assert_close_across("eval-mode logits", {**outputs, "numpy float64": reference}, FORWARD_ATOL)
    perturbed = {k: v.copy() for k, v in weights.items()}
    perturbed["block2.conv1.kernel"][1, 1, 3, 5] += 1e-2  # a test of the test, as below
    for fw, out in predict_all(served, perturbed, {"images": images}).items():
        with pytest.raises(AssertionError, match=fw):
            assert_close_across("eval-mode logits", {fw: out, "numpy float64": reference}, FORWARD_ATOL)


def test_perturbed_weight_breaks_forward_equivalence(impls):
    """A test of the test: 1e-2 on one kernel element of one framework must be caught."""
    weights = forward_weights()
    perturbed = {k: v.copy() for k, v in weights.items()}
    perturbed["block2.conv1.kernel"][1, 1, 3, 5] += 1e-2
    images = random_images(BATCH, seed=5)
    # The element matters (its channel is alive): in float64 it moves the logits by well over the tolerance.
    assert np.abs(numpy_forward(perturbed, images) - numpy_forward(weights, images)).max() > 10 * FORWARD_ATOL
    outputs = predict_all(impls, weights, {"images": images}, override={PERTURBED: perturbed})
    with pytest.raises(AssertionError, match=PERTURBED):
        assert_close_across("eval-mode logits", outputs, FORWARD_ATOL)


def test_three_sgd_steps_agree(impls):
    initial = spec.init_weights(0)
    images = random_images(TRAIN_ROWS, seed=6)
    labels = np.random.default_rng(7).integers(0, spec.NUM_CLASSES, TRAIN_ROWS).astype(np.int64)
    batches = batch_order(seed=8, epoch=0, num_samples=TRAIN_ROWS, batch_size=BATCH)[:STEPS]
    results = {}
    for fw, impl in impls.items():
        impl.load({k: v.copy() for k, v in initial.items()})
        impl.set_train_data({"images": images}, labels)
        losses = impl.train_steps(batches, LEARNING_RATES)
        assert losses.shape == (STEPS,) and losses.dtype == np.float32
        results[fw] = (losses, impl.export())
    # The steps did something: every trainable tensor and every running statistic moved.
    moved = [n for n in spec.PARAMETER_SHAPES if not np.array_equal(results["jax"][1][n], initial[n])]
    assert len(moved) == len(spec.PARAMETER_SHAPES)
    losses, torch_weights = results["pytorch"]
    # The correction matters: uncorrected, torch's running variances are off by far more than PARAM_ATOL.
    raw_gap, _ = worst_pair({"pytorch": torch_weights["block3.bn1.var"], "jax": results["jax"][1]["block3.bn1.var"]})
    assert raw_gap > 10 * PARAM_ATOL, raw_gap
    results["pytorch"] = (
        losses,
        torch_var_as_biased(torch_weights, initial, bn_rows_per_batch(BATCH), spec.BN_DECAY**STEPS),
    )
    assert_training_equivalent(results, loss_atol=LOSS_ATOL, param_atol=PARAM_ATOL)


def apply_configured_optimizer(fw: str, impl, param: np.ndarray, grads: list, lrs) -> np.ndarray:
    """The implementation's own optimizer configuration, applied to one parameter vector with given gradients."""
    if fw == "pytorch":
        import torch

        p = torch.nn.Parameter(torch.tensor(param))
        opt = type(impl.optimizer)([p], **impl.optimizer.defaults)
        for g, lr in zip(grads, lrs, strict=True):
            opt.param_groups[0]["lr"] = float(lr)
            p.grad = torch.tensor(g)
            opt.step()
        return p.detach().numpy()
    if fw == "tensorflow":
        import keras

        v = keras.Variable(param)
        opt = type(impl.optimizer).from_config(impl.optimizer.get_config())
        for g, lr in zip(grads, lrs, strict=True):
            opt.learning_rate = float(lr)
            opt.apply_gradients([(g, v)])
        return np.asarray(v.numpy())
    import jax.numpy as jnp
    import optax

    p = jnp.asarray(param)
    state = impl.tx.init(p)
    for g, lr in zip(grads, lrs, strict=True):
        state.hyperparams["learning_rate"] = jnp.float32(lr)
        updates, state = impl.tx.update(jnp.asarray(g), state, p)
        p = optax.apply_updates(p, updates)
    return np.asarray(p)


def test_optimizer_update_matches_torch(impls):
    """g += wd p; buf = momentum buf + g (buf = g at step 1); p -= lr buf, with lr changing every step."""
    fixed = impls["jax"].recipe.fixed
    rng = np.random.default_rng(9)
    param = rng.normal(0, 1, 6).astype(np.float32)
    grads = [rng.normal(0, 0.1, 6).astype(np.float32) for _ in range(3)]
    lrs = [0.1, 0.03, 0.2]
    expected, buf = param.astype(np.float64), np.zeros(6)
    for g, lr in zip(grads, lrs, strict=True):
        g = g + fixed["weight_decay"] * expected
        buf = fixed["momentum"] * buf + g
        expected = expected - lr * buf
    # fp32 arithmetic on values ~1 over 3 steps: a few ulp (1e-7); a missing or decoupled
    # weight decay would be off by >= 3e-4 here, lr inside the buffer by 4e-2.
    for fw, impl in impls.items():
        got = apply_configured_optimizer(fw, impl, param, grads, lrs)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6, err_msg=fw)


# --- mixed precision bf16 and fp16 (rules 1.1), compiled: the mode a run trains in ----------------------


def build_precision(fw: str, precision: str, weights: dict):
    """An implementation of rules 1.1's recipe with `precision`, compiled, loaded with `weights`."""
    recipe = Recipe.from_task(load_suite("1.1").task(TASK), precision=precision)
    impl = load_implementation(TASK, fw)(recipe, mode="compiled")
    impl.load({k: v.copy() for k, v in weights.items()})
    return impl


@pytest.fixture(scope="module", params=sorted(MIXED_ATOL))
def mixed(request):
    """(precision, {framework: implementation}) for bf16 and for fp16, built once per module."""
    return request.param, {fw: build_precision(fw, request.param, spec.init_weights(0)) for fw in FRAMEWORKS}


def test_mixed_forward_is_what_it_says_and_within_its_tolerance(mixed):
    precision, impls = mixed
    weights, images = forward_weights(), random_images(BATCH, seed=5)
    reference = numpy_forward(weights, images)
    outputs = predict_all(impls, weights, {"images": images})
    for fw, impl in impls.items():
        assert impl.hyperparameters()["precision"] == precision, fw  # read back from the framework's objects
        assert outputs[fw].dtype == np.float32
        worst = np.abs(outputs[fw] - reference).max()
        # > 10 x the fp32 tolerance: the low precision ran (fp32 lands ~3e-7 away); <= its own: it ran right.
        assert 10 * FORWARD_ATOL < worst <= MIXED_ATOL[precision]["forward"], (fw, worst)


def test_mixed_tolerance_catches_a_perturbed_weight(mixed):
    """A test of the test: one kernel element off by 1.0 in one framework, which moves the float64 logits
    by well over the precision's forward tolerance, must be caught at that tolerance."""
    precision, impls = mixed
    atol = MIXED_ATOL[precision]["forward"]
    weights = forward_weights()
    perturbed = {k: v.copy() for k, v in weights.items()}
    perturbed["block2.conv1.kernel"][1, 1, 3, 5] += 1.0
    images = random_images(BATCH, seed=5)
    assert np.abs(numpy_forward(perturbed, images) - numpy_forward(weights, images)).max() > 3 * atol
    outputs = predict_all(impls, weights, {"images": images}, override={"jax": perturbed})
    with pytest.raises(AssertionError, match="jax"):
        assert_close_across(f"{precision} eval-mode logits", outputs, atol)


def test_mixed_sgd_steps_agree_with_each_other_and_fp32(mixed):
    precision, impls = mixed
    initial = spec.init_weights(0)
    images = random_images(TRAIN_ROWS, seed=6)
    labels = np.random.default_rng(7).integers(0, spec.NUM_CLASSES, TRAIN_ROWS).astype(np.int64)
    batches = batch_order(seed=8, epoch=0, num_samples=TRAIN_ROWS, batch_size=BATCH)[:STEPS]
    runs = {**{f"{fw} {precision}": impl for fw, impl in impls.items()}}
    runs["jax fp32"] = build_precision("jax", "fp32", initial)
    results = {}
    for name, impl in runs.items():
        impl.load({k: v.copy() for k, v in initial.items()})
        impl.set_train_data({"images": images}, labels)
        losses = impl.train_steps(batches, LEARNING_RATES)
        exported = impl.export()
        assert {v.dtype for v in exported.values()} == {np.dtype(np.float32)}, name  # float32 master weights
        results[name] = (losses, exported)
    torch_run = f"pytorch {precision}"
    losses, torch_weights = results[torch_run]
    results[torch_run] = (
        losses,
        torch_var_as_biased(torch_weights, initial, bn_rows_per_batch(BATCH), spec.BN_DECAY**STEPS),
    )
    atol = MIXED_ATOL[precision]
    assert_training_equivalent(results, loss_atol=atol["loss"], param_atol=atol["param"])
    # The fp32 tolerances reject what the low precision changes: the comparison above is not fp32 in disguise.
    with pytest.raises(AssertionError, match="fp32"):
        assert_training_equivalent(
            {"jax fp32": results["jax fp32"], torch_run: results[torch_run]},
            loss_atol=LOSS_ATOL,
            param_atol=PARAM_ATOL,
        )
