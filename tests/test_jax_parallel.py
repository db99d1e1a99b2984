"""JAX on 2 processes (reference/frameworks/jax/parallel.py): the timed run compiles nothing, and
`levelfield train --nproc 2` trains the model one process trains; one process stays on one device.

The one-step math (2 processes = 1) is tests/test_multiprocess_step.py's; this file checks what a whole
run adds: after the trainer's warm-up no step, predict or broadcast compiles again on any rank (a
compilation inside run_start..run_stop would be timed as training, and with N processes a different input
sharding, e.g. a step output no longer replicated, would recompile on the second step), and the log and
summary of a 2-process run pass the single-process checks.

Tolerance, AUC_TOLERANCE = 1e-4, as tests/test_trainer_ddp.py argues for PyTorch: the two runs differ only
in fp32 rounding, and ROC AUC on the 1024 smoke eval rows moves by 4.2e-6 per swapped pair of scores.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import pytest
from jax.sharding import SingleDeviceSharding
from multiprocess_step import recipe
from test_trainer import check_smoke_log, mllog_records

from conftest import run_cli
from levelfield.cli.launch.local_group import run_ranks
from levelfield.cli.launch.rendezvous import local_cluster
from levelfield.ground.errors import UserError
from levelfield.ground.registry import load_implementation, task_module
from levelfield.harness.world import Layout
from levelfield.reference.frameworks.jax.parallel import OneDevice

RANK_SCRIPT = Path(__file__).with_name("jax_parallel_rank.py")
AUC_TOLERANCE = 1e-4
SEED = 5
# Start-up and one compiled ctr-dlrm step take ~15 s here; the shutdown barrier a crash once waited in, 300 s.
CRASH_LIMIT_S = 120


@pytest.mark.parametrize("task_id", ["fmnist-resnet", "seq-transformer", "ctr-dlrm"])
def test_one_process_keeps_everything_on_one_device(task_id):
    """Without --nproc no mesh exists: the arrays, the jitted step and predict are those of one device."""
    impl = load_implementation(task_id, "jax")(recipe(task_id))
    assert isinstance(impl.place, OneDevice)
    assert impl.place.jit_options == {}
    impl.load(task_module(task_id, "model_spec").init_weights(0))
    assert {leaf.sharding for leaf in jax.tree.leaves(impl.state)} == {SingleDeviceSharding(jax.devices()[0])}


@pytest.mark.parametrize("task_id", ["fmnist-resnet", "seq-transformer", "ctr-dlrm"])
def test_two_processes_compile_nothing_after_warmup(task_id, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"task": task_id, "out": str(tmp_path / "compiles")}))
    layout = Layout(nproc=2)
    assert run_ranks([str(RANK_SCRIPT), str(spec)], layout, local_cluster(layout, seed=0)) is None
    for rank in range(2):
        seen = json.loads((tmp_path / f"compiles.rank{rank}.json").read_text())
        assert not seen, (rank, seen[:3])


def test_a_crashed_rank_ends_the_run_at_once(tmp_path):
    """Rank 1 crashes while rank 0 waits for it in the warm-up step's all-reduce: rank 1 must exit at once
    (its closed connections fail rank 0's collective), not wait in jax.distributed's shutdown barrier for
    rank 0, which waits for rank 1: that held both for the barrier's 300 s, and blamed rank 0."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"task": "ctr-dlrm", "out": str(tmp_path / "compiles"), "fail_rank": 1}))
    layout = Layout(nproc=2)
    started = time.monotonic()
    with pytest.raises(UserError, match="rank 1 failed"):
        run_ranks([str(RANK_SCRIPT), str(spec)], layout, local_cluster(layout, seed=0))
    assert time.monotonic() - started < CRASH_LIMIT_S


def smoke(out: Path, *args: str) -> list[dict]:
    result = run_cli(
        "train", "--task", "ctr-dlrm", "--framework", "jax", "--profile", "smoke", "--seed", str(SEED),
        "--out", str(out), *args,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return mllog_records(out / "result_0.txt")


def eval_values(records: list[dict]) -> list[float]:
    return [r["value"] for r in records if r["key"] == "eval_accuracy"]


def test_two_processes_train_the_model_of_one(tmp_path):
    single = eval_values(smoke(tmp_path / "one"))
    double = eval_values(smoke(tmp_path / "two", "--nproc", "2"))
    assert len(single) == len(double) == 1
    assert double == pytest.approx(single, abs=AUC_TOLERANCE)
    records = check_smoke_log(tmp_path / "two", seed=SEED, framework="jax", mode="compiled", world_size=2)
    assert {r["key"]: r["value"] for r in records}["levelfield_distributed_backend"] == "gloo"
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["result_0.txt", "summary.json"]
