"""TensorFlow on N processes (reference/frameworks/tensorflow/parallel.py): what test_multiprocess_step.py does not see.

- Compiled mode (the default of `levelfield train`): there only the gradient computation is XLA-compiled and
  the all-reduce runs outside XLA; the acceptance test runs eager mode.
- The gradient's scale: Adam's first step hardly changes when every gradient is doubled (it moves each
  weight by about lr x sign(g)), so the weight comparison of the Adam tasks cannot tell a SUM of the ranks'
  gradients from their MEAN. Each rank's reported loss can: it is the rank's own mean loss only when Keras
  (or the implementation) divided the loss by the number of replicas before the optimizer summed the
  gradients, and that division is what makes the SUM a MEAN (ctr-dlrm's scalar BCE once lacked it).
- Rank 0's decision reaches every rank (broadcast_decision), whichever way it goes.
- One process creates no strategy at all (the path every single-process result takes).

This file is also the rank script:   python tests/test_tf_parallel.py SPEC.json   (started by run_ranks;
Python puts this directory first on sys.path, so multiprocess_step imports as under pytest).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from multiprocess_step import WEIGHTS_SEED, first_batch, recipe
from test_multiprocess_step import ADAM_WORST_LR_SHARE, BULK_ATOL, SGD_ATOL, expected_weights, worst_difference

from levelfield.ground.registry import load_implementation, task_module
from levelfield.harness.world import SINGLE, Layout, World

TASKS = ("fmnist-resnet", "ctr-dlrm", "seq-transformer")
NPROC = 2
JOIN_TIMEOUT_S = 600
LOSS_RTOL = 1e-5  # a rank's loss is the same fp32 mean over its rows as one process computes


def step_and_loss(task_id: str, mode: str, world: World = SINGLE, rows: np.ndarray | None = None):
    """(weights after one step of this rank's share of the first global batch (or of `rows`), its loss)."""
    inputs, labels, order = first_batch(task_id)
    r = recipe(task_id)
    impl = load_implementation(task_id, "tensorflow")(r, mode=mode)
    impl.load(task_module(task_id, "model_spec").init_weights(WEIGHTS_SEED))
    impl.set_train_data(inputs, labels)
    losses = impl.train_steps(world.share(order) if rows is None else rows, np.array([r.learning_rate], np.float32))
    return impl.export(), float(losses[0])


def rank_main(spec_file: str) -> None:
    """One rank: join, hear rank 0's two decisions, take the step; write what the test compares."""
    from levelfield.cli.launch.worker import take_cpu_share
    from levelfield.reference.frameworks.tensorflow import parallel as tf_parallel

    take_cpu_share(int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"]))
    spec = json.loads(Path(spec_file).read_text())
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    backend = tf_parallel.join_process_group(rank, size, json.loads(os.environ["LEVELFIELD_ADDRESSES"]), JOIN_TIMEOUT_S)
    # Rank 0 says yes then no; the others say the opposite, so only rank 0's word can explain the answers.
    heard = [tf_parallel.broadcast_decision(yes if rank == 0 else not yes) for yes in (True, False)]
    weights, loss = step_and_loss(spec["task"], spec["mode"], World(rank=rank, size=size))
    report = {"backend": backend, "heard": heard, "loss": loss, "replicas": tf_parallel.num_replicas()}
    Path(spec["out"]).with_suffix(f".{rank}.json").write_text(json.dumps(report))
    if rank == 0:
        np.savez(spec["out"], **weights)


def run_ranks_of(task_id: str, mode: str, tmp_path: Path) -> tuple[dict, list[dict]]:
    """Rank 0's weights and every rank's report after the 2-process step."""
    from levelfield.cli.launch.local_group import run_ranks
    from levelfield.cli.launch.rendezvous import local_cluster

    out = tmp_path / "rank0.npz"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"task": task_id, "mode": mode, "out": str(out)}))
    layout = Layout(nproc=NPROC)
    assert run_ranks([str(Path(__file__)), str(spec)], layout, local_cluster(layout, seed=0)) is None
    reports = [json.loads(out.with_suffix(f".{rank}.json").read_text()) for rank in range(NPROC)]
    with np.load(out) as saved:
        return dict(saved), reports


@pytest.mark.parametrize("task_id", TASKS)
def test_compiled_step_on_two_processes(task_id, tmp_path):
    got, reports = run_ranks_of(task_id, "compiled", tmp_path)
    assert [r["heard"] for r in reports] == [[True, False]] * NPROC
    assert {r["backend"] for r in reports} == {"grpc+ring"} and {r["replicas"] for r in reports} == {NPROC}
    _, _, order = first_batch(task_id)
    for rank, half in enumerate(np.split(order, NPROC, axis=1)):
        _, alone = step_and_loss(task_id, "compiled", rows=half)
        assert reports[rank]["loss"] == pytest.approx(alone, rel=LOSS_RTOL), f"rank {rank}'s loss"
    worst, bulk, where = worst_difference(got, expected_weights(task_id, "tensorflow", "compiled"))
    if recipe(task_id).fixed["optimizer"] == "sgd":
        assert worst <= SGD_ATOL, f"{where}: {worst:.3g} > {SGD_ATOL}"
    else:
        assert bulk <= BULK_ATOL
        assert worst <= ADAM_WORST_LR_SHARE * recipe(task_id).learning_rate, f"{where}: {worst:.3g}"


def test_one_process_has_no_strategy():
    from levelfield.reference.frameworks.tensorflow import parallel as tf_parallel

    assert tf_parallel.strategy() is None and tf_parallel.num_replicas() == 1

    def step():
        return 1

    assert tf_parallel.replicated(step) is step
    with tf_parallel.strategy_scope():
        import tensorflow as tf

        assert not tf.distribute.has_strategy()


if __name__ == "__main__":
    rank_main(sys.argv[1])
