"""One training step on N processes against the same step on one: the data, the step and the launch.

Used by tests/test_multiprocess_step.py (the comparison) and tests/one_step_rank.py (what each rank runs).
The step is the rules' own: the task's default recipe (rules 1.1) at its global batch size B, one step at
the default learning rate from the seed's initial weights, on the first rows of the real training set.
ctr-dlrm-standard's 1.07 GiB of tables, three times over in one test, do not fit beside the rest here: it
runs with every table capped at REDUCED_ROWS rows (its equivalence test's reduction) on its generator's
data at those cardinalities; the step, batch (2,048) and MLPs are the task's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from levelfield.ground.registry import load_implementation, task_module
from levelfield.harness.world import SINGLE, Layout, World
from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

RULES_VERSION = "1.1"  # the first rules with batch norm over several processes
WEIGHTS_SEED = 11
ORDER_SEED = 3
RANK_SCRIPT = Path(__file__).with_name("one_step_rank.py")
REDUCED_ROWS = {"ctr-dlrm-standard": 2048}  # task -> table rows (see the module docstring)
# ctr-dlrm-standard's plain SGD at its rules' default rate, 1.0: a ReLU kink crossed on one side in one
# framework's forward but not another's (the batch's halves are summed in other blocks) moves a top-MLP bias
# by up to 2.2e-5 after one step (measured, 2026-11-28: one element of 512, between PyTorch's and TensorFlow's
# one-process steps as between TensorFlow's one and two processes), past SGD_ATOL. A rate 20x smaller, inside
# the rules' range, keeps that under 1.1e-6 while a rank's half-batch gradient taken alone (no average)
# still moves weights by about 7e-5.
TUNED = {"ctr-dlrm-standard": {"learning_rate": 0.05}}


def spec_override(task_id: str) -> dict:
    """The class attributes that reduce a task's network here ({} for every task at its own size)."""
    if task_id not in REDUCED_ROWS:
        return {}
    return {"spec": task_module(task_id, "model_spec").SPEC.with_rows(REDUCED_ROWS[task_id])}


def initial_weights(task_id: str) -> dict:
    spec = spec_override(task_id).get("spec")
    return spec.init_weights(WEIGHTS_SEED) if spec else task_module(task_id, "model_spec").init_weights(WEIGHTS_SEED)


def recipe(task_id: str) -> Recipe:
    return Recipe.from_task(load_suite(RULES_VERSION).task(task_id), **TUNED.get(task_id, {}))


def first_batch(task_id: str) -> tuple[dict, np.ndarray, np.ndarray]:
    """(training inputs, labels, row indices int64 [1, B]) of the first global batch of the data order."""
    task = load_suite(RULES_VERSION).task(task_id)
    batch = recipe(task_id).global_batch_size
    inputs_module = task_module(task, "inputs")
    n = 4 * batch  # the order draws from more rows than one batch
    if task_id in REDUCED_ROWS:  # the generator at the reduced tables' cardinalities
        spec = spec_override(task_id)["spec"]
        params = {**task.dataset["params"], "cardinalities": list(spec.cardinalities)}
        arrays = task_module(task, "dataset").generate({**params, "train_samples": n, "eval_samples": 1})
    else:
        arrays = load_dataset(task)
    inputs = {k: v[:n] for k, v in inputs_module.model_inputs(arrays, "train").items()}
    labels = inputs_module.labels(arrays, "train")[:n]
    return inputs, labels, batch_order(ORDER_SEED, 0, n, batch)[:1]


def one_step(task_id: str, framework: str, mode: str, world: World = SINGLE, rows: np.ndarray | None = None) -> dict:
    """Every weight after one step of this process's share (`world.share`) of the first global batch
    (or of `rows` [1, b], taken whole), as neutral numpy arrays."""
    inputs, labels, order = first_batch(task_id)
    r = recipe(task_id)
    cls = load_implementation(task_id, framework)
    impl = type(f"Reduced{cls.__name__}", (cls,), spec_override(task_id))(r, mode=mode)
    impl.load(initial_weights(task_id))
    impl.set_train_data(inputs, labels)
    impl.train_steps(world.share(order) if rows is None else rows, np.array([r.learning_rate], np.float32))
    return impl.export()


def run_on_processes(task_id: str, framework: str, mode: str, nproc: int, out: Path) -> dict:
    """The same step on `nproc` processes of this host, started as levelfield starts TF and JAX ranks; rank 0's
    weights afterwards."""
    from levelfield.cli.launch.local_group import run_ranks
    from levelfield.cli.launch.rendezvous import local_cluster

    spec = out.with_suffix(".json")
    spec.write_text(json.dumps({"task": task_id, "framework": framework, "mode": mode, "out": str(out)}))
    layout = Layout(nproc=nproc)
    stopped = run_ranks([str(RANK_SCRIPT), str(spec)], layout, local_cluster(layout, seed=0))
    assert stopped is None, stopped
    with np.load(out) as saved:
        return dict(saved)


if __name__ == "__main__":  # pragma: no cover - a manual check: python tests/multiprocess_step.py TASK FRAMEWORK
    print(sorted(one_step(sys.argv[1], sys.argv[2], "eager")))
