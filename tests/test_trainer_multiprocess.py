"""`levelfield train --nproc 2`: a smoke run of every task x framework on two processes of this host.

Each framework's ranks join through its own engine (PyTorch DDP under torchrun's launcher, TensorFlow's
MultiWorkerMirroredStrategy, JAX's multi-process runtime); rank 0 writes the one log, which must pass every
check a one-process smoke log passes and state the processes, each one's share of the global batch and,
for batch norm, the span the implementation normalised over. Eager mode: compiling every implementation
twice more would add minutes, and tests/test_multiprocess_step.py compares the math itself. The rules are
1.1, the first to allow batch norm over several processes (fmnist-resnet).
"""

from __future__ import annotations

import pytest
from test_trainer import FRAMEWORKS, TASKS, check_smoke_log

from conftest import run_cli
from levelfield.ground.registry import load_implementation
from levelfield.rules import load_suite

SEED = 5
NPROC = 2


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("task", TASKS)
def test_a_smoke_run_on_two_processes(task, framework, tmp_path):
    out = tmp_path / "run"
    result = run_cli(
        "train", "--task", task, "--framework", framework, "--profile", "smoke", "--seed", str(SEED), "--eager",
        "--nproc", str(NPROC), "--rules-version", "1.1", "--out", str(out), timeout_s=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    records = check_smoke_log(out, seed=SEED, framework=framework, mode="eager", world_size=NPROC)
    value = {r["key"]: r["value"] for r in records}
    batch = load_suite("1.1").task(task).hyperparameters["tunable"]["global_batch_size"]["default"]
    assert value["global_batch_size"] == batch, "the rules' global batch, not a rank's share"
    assert (value["levelfield_local_batch_size"], value["levelfield_nodes"]) == (batch // NPROC, 1)
    assert value["levelfield_distributed_backend"]
    span = load_implementation(task, framework).batch_norm_spans.get("cpu")
    assert value.get("model_bn_span") == {None: None, "global": batch, "per_process": batch // NPROC}[span]
    # Only rank 0 writes: one log, one summary.
    assert sorted(p.name for p in out.iterdir()) == ["result_0.txt", "summary.json"]
