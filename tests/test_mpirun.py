"""`mpirun -n 2 levelfield train`: the ranks Open MPI starts, one per process it launches, on this host.

Each framework joins through its own reading of Open MPI's variables (docs/distributed.md, Open MPI): JAX's
OmpiCluster, TF_CONFIG as TensorFlow's Slurm resolver would write it for one node, torch's env://. No
torchrun or levelfield starter runs. A result Open MPI started on one host is replayed by `levelfield
reproduce` with --nproc on this host. Skips, with the reason, where Open MPI is not installed (`make test`
installs it). As root (the tests here), mpirun needs --allow-run-as-root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from managed_runs import FRAMEWORKS, RANKS, RUN_TIMEOUT_S, check_managed_run, describe_system, package_and_check
from managed_runs import train_argv as levelfield_train

from conftest import run_cli
from levelfield.ground import mllog_keys as LK

if shutil.which("mpirun") is None:
    pytest.skip(
        "Open MPI is not installed here (no mpirun; Debian: apt-get install openmpi-bin, which `make test` runs)",
        allow_module_level=True,
    )


def mpirun(*argv: str) -> list[str]:
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return ["mpirun", "-n", str(RANKS), *root, *argv]


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    return describe_system(tmp_path_factory.mktemp("system") / "box.json", nodes=1)


@pytest.fixture(scope="module")
def mpirun_run(system, tmp_path_factory):
    """framework -> (its run folder, the finished mpirun): each framework's run made once for the module."""
    made = {}

    def run(framework: str) -> tuple[Path, subprocess.CompletedProcess]:
        if framework not in made:
            out = tmp_path_factory.mktemp(f"mpirun-{framework}") / "run"
            argv = mpirun(*levelfield_train(framework, out, system))
            made[framework] = out, subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        return made[framework]

    return run


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_smoke_run_mpirun_started(system, mpirun_run, framework, tmp_path):
    out, result = mpirun_run(framework)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    check_managed_run(out, framework, result.stdout, launcher="openmpi", nodes=1)
    package_and_check(out, system, tmp_path)


def test_a_result_mpirun_started_on_one_host_is_replayed_with_nproc(system, mpirun_run, tmp_path):
    out, result = mpirun_run("pytorch")
    assert result.returncode == 0, result.stderr[-3000:]
    tree = package_and_check(out, system, tmp_path)
    (rid,) = [line.split()[0] for line in run_cli("reproduce", str(tree)).stdout.splitlines() if "training" in line]
    result = run_cli("reproduce", str(tree), "--result", rid, "--out", str(tmp_path / "repro"), timeout_s=900)
    # The verdict is not this test's (two processes of a loaded CPU, a smoke run): the replay is.
    assert result.returncode in (0, 1), (result.stdout, result.stderr[-3000:])
    report = json.loads((tmp_path / "repro" / "reproduction.json").read_text())
    assert report["recipe"]["launcher"]["name"] == "openmpi"
    assert f"on {RANKS} processes of this host (levelfield train --nproc {RANKS})" in report["how"]
    assert "the submission's ranks were started by Open MPI (job " in report["how"]
    (log,) = (tmp_path / "repro" / "training").glob("result_*.txt")
    text = log.read_text()
    assert f'"key": "{LK.WORLD_SIZE}", "value": {RANKS}' in text
    assert f'"key": "{LK.LAUNCHER}", "value": {{"name": "torchrun", "job_id": null, "step_id": null}}' in text
    assert {"what": f"{LK.LAUNCHER}.name", "submitted": "openmpi", "reproduced": "torchrun"} in report[
        "environment_differences"
    ]
