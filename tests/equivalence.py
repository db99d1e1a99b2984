"""Cross-framework equivalence: same weights + same batch => same outputs, losses and updates.

Used by tests/test_equivalence_<task>.py. Every comparison is pairwise over
the three training frameworks and reports the largest difference found, so a
failure says which frameworks disagree and by how much. ONNX Runtime, which
serves inference only, joins every comparison of outputs (its graph built
from the same neutral weights), at the same fp32 tolerance.
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from levelfield.ground.registry import INFERENCE_ONLY, load_implementation
from levelfield.reference.interface import COMPILED, Recipe
from levelfield.rules import load_suite

# Every framework by default. LEVELFIELD_TEST_FRAMEWORKS=pytorch,jax compares a subset: the device check
# (`levelfield device-check`) sets it on a GPU node that has no TensorFlow; CI never sets it.
_NAMED = tuple(
    name.strip()
    for name in os.environ.get("LEVELFIELD_TEST_FRAMEWORKS", "pytorch,tensorflow,jax,onnxruntime").split(",")
)
# The frameworks that train: every comparison (outputs, losses, updates).
FRAMEWORKS = tuple(name for name in _NAMED if name not in INFERENCE_ONLY)
# The frameworks that serve inference only (ONNX Runtime): the comparisons of outputs, on the same weights.
INFERENCE_ONLY_FRAMEWORKS = tuple(name for name in _NAMED if name in INFERENCE_ONLY)
INFERENCE_FRAMEWORKS = FRAMEWORKS + INFERENCE_ONLY_FRAMEWORKS
# The framework a test of the tests perturbs (any one of those compared will do; the last is always there).
PERTURBED = FRAMEWORKS[-1]


def build(task_id: str, framework: str, mode: str, weights: dict[str, np.ndarray]):
    """An implementation with the rules' default recipe, loaded with `weights`."""
    task = load_suite().task(task_id)
    impl = load_implementation(task_id, framework)(Recipe.from_task(task), mode=mode)
    impl.load({name: value.copy() for name, value in weights.items()})
    return impl


def worst_pair(values: dict[str, np.ndarray]) -> tuple[float, str]:
    """Largest max-abs difference between any two frameworks' arrays, and which pair."""
    worst, pair = 0.0, ""
    for a, b in itertools.combinations(values, 2):
        assert values[a].shape == values[b].shape, (a, values[a].shape, b, values[b].shape)
        diff = float(np.max(np.abs(values[a].astype(np.float64) - values[b].astype(np.float64)), initial=0.0))
        if diff > worst or not pair:
            worst, pair = diff, f"{a} vs {b}"
    return worst, pair


def assert_close_across(what: str, values: dict[str, np.ndarray], atol: float) -> None:
    worst, pair = worst_pair(values)
    assert worst <= atol, f"{what}: max abs diff {worst:.3g} ({pair}) exceeds {atol:.3g}"


def forward_outputs(
    task_id: str,
    weights: dict,
    inputs: dict,
    mode: str,
    frameworks=FRAMEWORKS,
    per_framework_weights: dict | None = None,
) -> dict[str, np.ndarray]:
    """predict() of every framework on the same inputs; `per_framework_weights` overrides one framework's weights."""
    out = {}
    for fw in frameworks:
        w = (per_framework_weights or {}).get(fw, weights)
        out[fw] = build(task_id, fw, mode, w).predict(inputs)
    return out


def predict_all(impls: dict, weights: dict, inputs: dict, override: dict | None = None) -> dict[str, np.ndarray]:
    """predict() of each built implementation on `inputs` after loading a copy of `weights` into it (`override`:
    {framework: its own weights})."""
    out = {}
    for fw, impl in impls.items():
        impl.load({k: v.copy() for k, v in (override or {}).get(fw, weights).items()})
        out[fw] = impl.predict(inputs)
    return out


def train_all(
    impls: dict, weights: dict, inputs: dict, labels: np.ndarray, batch_indices: np.ndarray, lrs: np.ndarray
) -> dict[str, tuple[np.ndarray, dict]]:
    """(losses per step, exported weights after the steps) of each built implementation, loaded with `weights` (a
    load also starts its optimizer state afresh) and trained on `inputs`."""
    results = {}
    for fw, impl in impls.items():
        impl.load(weights)
        impl.set_train_data(inputs, labels)
        results[fw] = (impl.train_steps(batch_indices, lrs), impl.export())
    return results


def torch_var_as_biased(exported: dict, initial: dict, rows_per_bn: dict[str, int], decay: float) -> dict:
    """torch's running_var re-expressed with the biased batch variance that Flax and Keras use, after steps whose
    decays multiply to `decay` (BN_DECAY**steps); `rows_per_bn`: BN layer prefix -> n, its batch statistics' count.

    torch: v_k = d^k v_0 + (1 - d) sum_i d^(k-i) * n/(n-1) * s_i;  biased: the same without n/(n-1).
    So biased v_k = d^k v_0 + (v_k - d^k v_0) * (n-1)/n, exactly, for a fixed n.
    """
    out = dict(exported)
    for prefix, n in rows_per_bn.items():
        name = f"{prefix}.var"
        if name in exported:
            start = decay * initial[name].astype(np.float64)
            out[name] = (start + (exported[name] - start) * (n - 1) / n).astype(np.float32)
    return out


def training_results(
    task_id: str,
    weights: dict,
    inputs: dict,
    labels: np.ndarray,
    batch_indices: np.ndarray,
    lrs: np.ndarray,
    mode: str,
    frameworks=FRAMEWORKS,
) -> dict[str, tuple[np.ndarray, dict]]:
    """(losses per step, exported weights after the steps) for every framework."""
    results = {}
    for fw in frameworks:
        impl = build(task_id, fw, mode, weights)
        impl.set_train_data(inputs, labels)
        losses = impl.train_steps(batch_indices, lrs)
        results[fw] = (np.asarray(losses), impl.export())
    return results


def assert_exports_what_it_loaded(impl, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """load(weights) then export() gives every array back bit for bit, float32, in its shape; the export."""
    impl.load(weights)
    exported = impl.export()
    assert set(exported) == set(weights)
    for name, value in weights.items():
        assert exported[name].dtype == np.float32 and exported[name].shape == value.shape, name
        np.testing.assert_array_equal(exported[name], value, err_msg=name)
    return exported


def assert_training_equivalent(results: dict, loss_atol: float, param_atol: float) -> None:
    losses = {fw: r[0] for fw, r in results.items()}
    assert_close_across("training loss per step", losses, loss_atol)
    names = set.intersection(*(set(r[1]) for r in results.values()))
    assert all(set(r[1]) == names for r in results.values()), "frameworks export different weight names"
    for name in sorted(names):
        assert_close_across(f"weight {name} after training", {fw: r[1][name] for fw, r in results.items()}, param_atol)


def spread_weights(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    """Trained-like transformer weights for `shapes` (neutral names): unit embeddings, kernels std
    1.5/sqrt(fan_in), random biases and LN params, so differences are not hidden by a near-zero init."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in shapes.items():
        kind = name.rsplit(".", 1)[1]
        if kind == "embedding":
            value = rng.standard_normal(shape)
        elif kind == "kernel":
            value = rng.normal(0.0, 1.5 / np.sqrt(shape[0]), shape)
        elif kind == "scale":
            value = 1.0 + 0.2 * rng.standard_normal(shape)
        else:
            value = 0.2 * rng.standard_normal(shape)
        weights[name] = value.astype(np.float32)
    return weights


def bulk_worst_pair(results: dict[str, tuple[np.ndarray, dict]], quantile: float) -> tuple[float, str]:
    """Largest, over every pair of runs, of the `quantile` of |difference| over all their weights pooled."""
    worst, pair = 0.0, ""
    for a, b in itertools.combinations(results, 2):
        wa, wb = results[a][1], results[b][1]
        pooled = np.concatenate([np.abs(wa[n].astype(np.float64) - wb[n]).ravel() for n in sorted(wa)])
        value = float(np.quantile(pooled, quantile))
        if value > worst or not pair:
            worst, pair = value, f"{a} vs {b}"
    return worst, pair


def assert_mixed_step_agrees(
    results: dict[str, tuple[np.ndarray, dict]],
    *,
    loss_atol: float,
    param_atol: float,
    bulk_atol: float,
    quantile: float,
) -> None:
    """One mixed-precision training step (the standard tasks' bf16, rules 1.2) against the others and fp32:
    `results` {run name: (losses, exported weights)}, pairwise: the losses within loss_atol, every weight
    within param_atol, and `quantile` of all weights pooled within bulk_atol (a low precision rounds a few
    weights' updates far more than the bulk's; the equivalence tests' docstrings give the measured worst)."""
    assert_training_equivalent(results, loss_atol, param_atol)
    worst, pair = bulk_worst_pair(results, quantile)
    assert worst <= bulk_atol, (
        f"{quantile:.1%} of the weights: max abs diff {worst:.3g} ({pair}) exceeds {bulk_atol:.3g}"
    )


def reduced_runs(task_id: str, recipe: Recipe, overrides: dict) -> dict:
    """{"<framework> <precision>": a compiled implementation of every training framework at `recipe`}, each a
    subclass with `overrides` (a standard task's reduced `spec`, ...)."""
    runs = {}
    for fw in FRAMEWORKS:
        cls = load_implementation(task_id, fw)
        runs[f"{fw} {recipe.precision}"] = type(f"Reduced{cls.__name__}", (cls,), overrides)(recipe, mode=COMPILED)
    return runs


def one_step_each(
    runs: dict, weights: dict, inputs: dict, labels: np.ndarray, batches: np.ndarray, learning_rates, adjust=None
) -> dict[str, tuple[np.ndarray, dict]]:
    """{run name: (losses, exported weights)} of `batches` trained by each run from a copy of `weights`; each
    run's precision (the name's second word) read back from the framework and its master weights float32.
    `adjust(name, exported)`: the export made comparable (PyTorch's unbiased batch-norm variance)."""
    results = {}
    for name, impl in runs.items():
        impl.load({k: v.copy() for k, v in weights.items()})
        impl.set_train_data(inputs, labels)
        losses, exported = impl.train_steps(batches, learning_rates), impl.export()
        assert impl.hyperparameters()["precision"] == name.split()[1], name  # read back from the framework
        assert {v.dtype for v in exported.values()} == {np.dtype(np.float32)}, name  # float32 master weights
        results[name] = (losses, exported if adjust is None else adjust(name, exported))
    return results


def assert_fp32_tolerances_reject(results: dict, low: str, reference: str, loss_atol: float, param_atol: float) -> None:
    """The low precision ran: fp32's tolerances reject every framework's `low` step ("<fw> bf16") against
    `reference` ("jax fp32")."""
    import pytest

    for fw in FRAMEWORKS:
        pair = {f"{fw} {low}": results[f"{fw} {low}"], reference: results[reference]}
        with pytest.raises(AssertionError, match="exceeds"):
            assert_training_equivalent(pair, loss_atol, param_atol)
