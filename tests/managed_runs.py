"""What the srun and mpirun tests share: a 2-rank smoke training a workload manager starts, and its checks.

    argv = train_argv("jax", out, system)              # the levelfield command each manager task runs
    records = check_managed_run(out, "jax", stdout, launcher="slurm", nodes=2)
    package_and_check(out, system, tmp_path)           # `levelfield package`, then the checker: no error

ctr-dlrm's smoke profile is the cheapest run that exercises the engines. PyTorch and TensorFlow run eagerly
(torch.compile and XLA would add compile time and nothing these tests look at); JAX compiled, because on
two processes its eager mode compiles each op's collective program in turn and took twice as long here.
No --seed: each rank draws one and rank 0's reaches the others through the framework's broadcast, which
rank 1's closing line shows (the test compares it with the seed rank 0 logged).
"""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path

from test_trainer import check_smoke_log

from conftest import run_cli
from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from levelfield.rules import load_suite

TASK = "ctr-dlrm"
FRAMEWORKS = ("pytorch", "tensorflow", "jax")
MODES = {"pytorch": "eager", "tensorflow": "eager", "jax": "compiled"}
RANKS = 2
RUN_TIMEOUT_S = 900  # two ranks compile and train a smoke run; far longer means a hang
ORG = "levelfield"


def train_argv(framework: str, out: Path, system: Path, *extra: str) -> list[str]:
    mode = "--compile" if MODES[framework] == "compiled" else "--eager"
    return [
        sys.executable, "-m", "levelfield", "train", "--task", TASK, "--framework", framework, "--profile", "smoke",
        mode, "--org", ORG, "--system", str(system), "--out", str(out), *extra,
    ]  # fmt: skip


def describe_system(path: Path, nodes: int) -> Path:
    """This machine's system description (as `levelfield demo` fills it in) declaring `nodes` nodes."""
    from levelfield.cli.commands.demo import DEMO_SYSTEM_FIELDS
    from levelfield.ground.sysinfo import collect_system_description, to_json

    description = collect_system_description()
    description.update(DEMO_SYSTEM_FIELDS, submitter=ORG, system_name=f"{socket.gethostname()} (managed ranks)")
    description["number_of_nodes"] = nodes
    path.write_text(to_json(description))
    return path


def check_managed_run(out: Path, framework: str, stdout: str, *, launcher: str, nodes: int) -> list[dict]:
    """Rank 0's log and summary as any 2-process smoke run's, plus the manager's record; rank 1's seed is rank 0's."""
    seeds = re.findall(r"rank 1 of 2 \(.*\): done, seed\(s\) (\d+);", stdout)
    assert len(seeds) == 1, stdout[-3000:]
    records = check_smoke_log(out, seed=int(seeds[0]), framework=framework, mode=MODES[framework], world_size=RANKS)
    value = {r["key"]: r["value"] for r in records}
    batch = load_suite().task(TASK).hyperparameters["tunable"]["global_batch_size"]["default"]
    assert (value[LK.NODES], value[LK.LOCAL_BATCH_SIZE], value["global_batch_size"]) == (nodes, batch // RANKS, batch)
    assert value[LK.DISTRIBUTED_BACKEND]
    record = value[LK.LAUNCHER]
    assert record["name"] == launcher and record["job_id"], record
    assert (record["step_id"] is not None) == (launcher == "slurm"), record
    assert json.loads((out / "summary.json").read_text())["launcher"] == record
    assert sorted(p.name for p in out.iterdir()) == ["result_0.txt", "summary.json"]  # only rank 0 writes
    return records


def package_and_check(out: Path, system: Path, tmp: Path) -> Path:
    """`levelfield package` the run with its system, then check the tree as a smoke result: no error."""
    tree = tmp / "tree"
    result = run_cli(
        "package", "--runs", str(out), "--system", str(system), "--org", ORG, "--division", "closed",
        "--out", str(tree),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = check_tree(tree, profile="smoke")
    assert not report.failed, [f"{f.path}: {f.code} {f.message} ({f.found}, {f.expected})" for f in report.active]
    return tree
