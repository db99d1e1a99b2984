"""One training step on N processes against the same step on one: the data, the step and the launch.

Used by tests/test_multiprocess_step.py (the comparison) and tests/one_step_rank.py (what each rank runs).
The step is the rules' own: the task's default recipe (rules 1.1) at its global batch size B, one step at
the default learning rate from the seed's initial weights, on the first rows of the real training set.
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


def recipe(task_id: str) -> Recipe:
    return Recipe.from_task(load_suite(RULES_VERSION).task(task_id))


def first_batch(task_id: str) -> tuple[dict, np.ndarray, np.ndarray]:
    """(training inputs, labels, row indices int64 [1, B]) of the first global batch of the data order."""
    task = load_suite(RULES_VERSION).task(task_id)
    batch = recipe(task_id).global_batch_size
    inputs_module = task_module(task, "inputs")
    arrays = load_dataset(task)
    n = 4 * batch  # the order draws from more rows than one batch
    inputs = {k: v[:n] for k, v in inputs_module.model_inputs(arrays, "train").items()}
    labels = inputs_module.labels(arrays, "train")[:n]
    return inputs, labels, batch_order(ORDER_SEED, 0, n, batch)[:1]


def one_step(task_id: str, framework: str, mode: str, world: World = SINGLE, rows: np.ndarray | None = None) -> dict:
    """Every weight after one step of this process's share (`world.share`) of the first global batch
    (or of `rows` [1, b], taken whole), as neutral numpy arrays."""
    inputs, labels, order = first_batch(task_id)
    r = recipe(task_id)
    impl = load_implementation(task_id, framework)(r, mode=mode)
    impl.load(task_module(task_id, "model_spec").init_weights(WEIGHTS_SEED))
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
