"""`srun levelfield train`: the ranks Slurm starts, one per task, on a real Slurm cluster started here.

The module's cluster (tests/slurm_cluster.py, the `slurm` fixture) has two nodes in two network namespaces
where they can be made (one rank on each), else one node (two ranks on it). Each framework joins through its
own resolver of Slurm's variables (docs/distributed.md, Slurm); no torchrun or levelfield starter runs inside
the job. Skips, with the reason, where Slurm is not installed (`make test` installs it).
"""

from __future__ import annotations

import pytest
from managed_runs import FRAMEWORKS, RANKS, RUN_TIMEOUT_S, check_managed_run, describe_system, package_and_check
from managed_runs import train_argv as levelfield_train
from slurm_cluster import slurm_cluster


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """One real Slurm cluster for this module's tests, stopped after them (its two hosts hold the veth pair's
    turn while it lives: tests/two_hosts.py); skips where Slurm is not installed."""
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def system(slurm, tmp_path_factory):
    return describe_system(tmp_path_factory.mktemp("system") / "box.json", nodes=slurm.nodes)


def srun(slurm, *argv: str) -> list[str]:
    """Two tasks over the cluster's nodes; a failed task ends the step (as docs/distributed.md's scripts do)."""
    return ["srun", "--nodes", str(slurm.nodes), "--ntasks", str(RANKS), "--kill-on-bad-exit=1", *argv]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_smoke_run_slurm_started(slurm, system, framework, tmp_path):
    out = tmp_path / "run"
    result = slurm.run(srun(slurm, *levelfield_train(framework, out, system)), timeout_s=RUN_TIMEOUT_S)
    assert result.returncode == 0, (slurm.one_node_reason, result.stdout[-2000:], result.stderr[-3000:])
    check_managed_run(out, framework, result.stdout, launcher="slurm", nodes=slurm.nodes)
    package_and_check(out, system, tmp_path)


def test_a_command_that_contradicts_slurm_is_refused_naming_the_variable(slurm, system, tmp_path):
    per_node = RANKS // slurm.nodes
    argv = levelfield_train("jax", tmp_path / "run", system, "--nproc", str(per_node + 1))
    result = slurm.run(srun(slurm, *argv), timeout_s=120)
    assert result.returncode != 0
    tasks = f"{per_node}(x{slurm.nodes})" if slurm.nodes > 1 else str(per_node)
    expected = f"levelfield: error: SLURM_STEP_TASKS_PER_NODE={tasks}: {per_node} rank(s) on each node, but --nproc"
    assert expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()
