"""`levelfield train --nproc 2` in PyTorch: real processes started by torchrun's engine, DDP on gloo (CPU).

Two processes must train the model one process trains: same data order, each
rank half of every global batch, gradients averaged by DDP. The eval metric
here is ROC AUC on 1024 smoke eval rows (354 positive, 670 negative).

Tolerance, AUC_TOLERANCE = 1e-4: the two runs differ only in fp32 rounding
(the gradient is summed over two halves and then across ranks instead of over
one batch; each rank runs 1 thread instead of 2). AUC is rank based, so such
differences move it only when two eval scores swap order, by 1/(354*670) =
4.2e-6 per swapped pair; 1e-4 allows about 24 swaps. A real difference is
far larger: rank 0 training on its half without the gradient average reaches
0.5631 instead of 0.5577 (5.3e-3 off) after the smoke epoch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_trainer import check_smoke_log, mllog_records

from conftest import assert_user_error, default_rules_version, run_cli

AUC_TOLERANCE = 1e-4
SEED = 5
CTR_SMOKE = ["--task", "ctr-dlrm", "--framework", "pytorch", "--profile", "smoke", "--seed", str(SEED)]
# The submission profile trains for many epochs: long enough to interrupt mid-run.
CTR_LONG = ["--task", "ctr-dlrm", "--framework", "pytorch", "--eager", "--seed", "1", "--nproc", "2"]


def eval_values(out: Path) -> list[float]:
    return [r["value"] for r in mllog_records(out / "result_0.txt") if r["key"] == "eval_accuracy"]


def train(out: Path, *args: str) -> Path:
    result = run_cli("train", *CTR_SMOKE, *args, "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> Path:
    return train(tmp_path_factory.mktemp("one") / "run", "--eager")


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory) -> Path:
    return train(tmp_path_factory.mktemp("two") / "run", "--eager", "--nproc", "2")


def test_two_processes_train_the_model_of_one(one_process, two_processes):
    single, double = eval_values(one_process), eval_values(two_processes)
    assert len(single) == len(double) == 1
    assert double == pytest.approx(single, abs=AUC_TOLERANCE)


def test_two_process_log_passes_the_single_process_checks(two_processes):
    records = check_smoke_log(two_processes, seed=SEED, framework="pytorch", mode="eager", world_size=2)
    by_key = {r["key"]: r["value"] for r in records}
    assert by_key["levelfield_distributed_backend"] == "gloo"
    assert by_key["global_batch_size"] == 1024, "the rules' global batch, not a rank's share"
    # Only rank 0 writes: one log, one summary, nothing else.
    assert sorted(p.name for p in two_processes.iterdir()) == ["result_0.txt", "summary.json"]
    assert sum(r["key"] == "run_start" for r in records) == 1


def test_compiled_two_processes_match_too(one_process, tmp_path):
    """The default mode: torch.compile of the DDP-wrapped model (graphs split at DDP's buckets)."""
    out = train(tmp_path / "run", "--compile", "--nproc", "2")
    check_smoke_log(out, seed=SEED, framework="pytorch", mode="compiled", world_size=2)
    assert eval_values(out) == pytest.approx(eval_values(one_process), abs=AUC_TOLERANCE)


def start_long_run(out: Path) -> subprocess.Popen:
    """A 2-process run of the submission profile, returned once rank 0 has started its first epoch."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "levelfield", "train", *CTR_LONG, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    partial = out / "result_0.txt.inprogress"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (partial.exists() and '"epoch_start"' in partial.read_text()):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        time.sleep(0.2)
    assert partial.exists(), "the run never started"
    return proc


def test_sigterm_to_the_launcher_ends_rank_0s_log_with_run_stop_aborted(tmp_path):
    out = tmp_path / "run"
    proc = start_long_run(out)
    proc.send_signal(signal.SIGTERM)  # torchrun's agent forwards it to every rank
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, stderr[-3000:])
    records = mllog_records(out / "result_0.txt")
    assert records[-1]["key"] == "run_stop"
    assert {"status": "aborted", "reason": "interrupted"}.items() <= records[-1]["metadata"].items()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted_by"] == "SIGTERM" and summary["world_size"] == 2


def rank_pid(launcher: int, rank: int) -> int:
    """The pid of the launcher's child process that torchrun started as `rank` (RANK in its environment)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):  # exited meanwhile, or not ours to read
            continue
        if parent == launcher and f"RANK={rank}".encode() in environ:
            return int(entry.name)
    raise AssertionError(f"no rank {rank} among the children of {launcher}")


def test_a_killed_rank_stops_every_rank_with_a_clear_error(tmp_path):
    out = tmp_path / "run"
    proc = start_long_run(out)
    os.kill(rank_pid(proc.pid, 1), signal.SIGKILL)
    killed = time.monotonic()
    _, stderr = proc.communicate(timeout=120)
    assert time.monotonic() - killed < 60, "rank 0 waited for the dead rank"
    assert_user_error(
        subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr.replace("Traceback", "")),
        "--nproc 2: rank 1 failed (killed by SIGKILL)",
        "torchrun stopped the other ranks",
    )
    # Rank 0 noticed (a collective's error, or torchrun's SIGTERM) and ended its log as aborted.
    log = out / "result_0.txt" if (out / "result_0.txt").exists() else out / "result_0.txt.inprogress"
    records = mllog_records(log)
    assert records[-1]["key"] == "run_stop" and records[-1]["metadata"]["status"] == "aborted"


def test_a_rank_killed_without_an_error_file_is_named_before_the_peer_that_lost_it(tmp_path):
    """torch orders failures by timestamp, and a killed rank's is when torchrun noticed it: after its peer's
    broken gloo connection was written to the peer's error file. Named that way, the error blamed rank 0."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    from levelfield.cli.launch.torch_engine import failure_error
    from levelfield.harness.world import Layout

    def failed(rank: int, exitcode: int, message: str | None, at_s: int) -> ProcessFailure:
        error_file = tmp_path / f"error_{rank}.json"
        if message is not None:
            error_file.write_text(json.dumps({"message": {"message": message, "extraInfo": {"timestamp": at_s}}}))
        return ProcessFailure(local_rank=rank, pid=100 + rank, exitcode=exitcode, error_file=str(error_file))

    broken = failed(0, -signal.SIGTERM, "RuntimeError: Connection reset by peer", 1_700_000_000)
    killed = failed(1, -signal.SIGKILL, None, 1_700_000_001)
    error = failure_error(ChildFailedError("worker", {0: broken, 1: killed}), Layout(nproc=2))
    assert "--nproc 2: rank 1 failed (killed by SIGKILL)" in str(error) and "rank(s) 0 failed after it" in str(error)
    # Two ranks that each wrote an error: the earlier one.
    second = failed(1, 1, "RuntimeError: later", 1_700_000_005)
    assert "rank 0 failed" in str(failure_error(ChildFailedError("worker", {0: broken, 1: second}), Layout(nproc=2)))


def test_a_user_error_in_the_ranks_is_reported_once_without_traceback(rules_copy, tmp_path):
    from levelfield.rules import load_suite

    path = rules_copy / default_rules_version() / "tasks" / "ctr-dlrm.yaml"
    pinned = load_suite().task("ctr-dlrm").dataset["sha256"]
    path.write_text(path.read_text().replace(pinned, "f" * 64))
    result = run_cli(
        "train", *CTR_SMOKE, "--eager", "--nproc", "2", "--rules-dir", str(rules_copy), "--out", str(tmp_path / "run")
    )
    assert_user_error(result, f"SHA-256 mismatch (found {pinned}, expected {'f' * 64})")
    assert result.stderr.count("levelfield: error:") == 1
    assert not (tmp_path / "run" / "result_0.txt").exists()


def _too_many_processes() -> int:
    """A power of two (so it divides the global batch) above this machine's core count."""
    n = 2
    while n <= len(os.sched_getaffinity(0)):
        n *= 2
    return n


@pytest.mark.parametrize(
    "args, message",
    [
        (["--framework", "jax", "--nnodes", "2"], "--nnodes 2: every host needs --rdzv-endpoint HOST:PORT"),
        (
            ["--framework", "jax", "--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "198.18.0.1:29400"],
            "--node-rank 2: expected 0 to 1 for --nnodes 2",
        ),
        (["--framework", "tensorflow", "--rdzv-endpoint", "198.18.0.1:29400"], "got --nnodes 1"),
        (
            ["--framework", "tensorflow", "--nnodes", "2", "--rdzv-endpoint", "198.18.0.1"],
            "--rdzv-endpoint 198.18.0.1: expected HOST:PORT",
        ),
        (["--framework", "pytorch", "--nnodes", "0"], "--nnodes 0: expected a number of hosts from 1 to 1024"),
        (["--framework", "pytorch", "--nproc", "0"], "--nproc 0: expected a number of processes from 1 to 64"),
        (["--framework", "pytorch", "--nproc", "65"], "--nproc 65: expected a number of processes from 1 to 64"),
        (["--framework", "pytorch", "--nproc", "3"], "global_batch_size 1024 does not split into 3 equal shares"),
        (["--framework", "pytorch", "--nproc", str(_too_many_processes())], "more processes than the"),
    ],
)
def test_bad_nproc_is_a_user_error(args, message, tmp_path):
    assert_user_error(run_cli("train", "--task", "ctr-dlrm", *args, "--out", str(tmp_path / "o")), message)
    assert not (tmp_path / "o").exists()


def test_batch_norm_over_processes_needs_rules_that_allow_it(tmp_path):
    """Rules 1.0 list no batch-norm span for several processes: fmnist-resnet trains in one process there."""
    assert_user_error(
        run_cli(
            "train", "--task", "fmnist-resnet", "--framework", "pytorch", "--nproc", "2", "--rules-version", "1.0",
            "--out", str(tmp_path / "o"),
        ),
        "fmnist-resnet/pytorch normalises batch norm per_process on cpu",
        "allows no batch norm over several processes",
    )  # fmt: skip
