"""Two hosts for real: `levelfield train --nnodes 2` in every framework across two network namespaces.

Each "host" is a network namespace this test makes (tests/two_hosts.py), joined to the other by a veth
pair with addresses from the RFC 2544 benchmarking range; the ranks meet through levelfield's rendezvous
at node 0's address and train over TCP through their framework's own engine. Skips where namespaces
cannot be made (no root, no iproute2), with the reason.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_trainer import mllog_records
from two_hosts import ADDRESSES, two_hosts

from levelfield.rules import load_suite

FRAMEWORKS = ("pytorch", "tensorflow", "jax")
ENDPOINT = f"{ADDRESSES[0]}:29400"  # a fresh namespace: nothing else listens there
RUN_TIMEOUT_S = 900  # both hosts compile and train a smoke run; far longer means a hang
DEAD_PEER_BOUND_S = 180  # after the other host dies, node 0 must end within this


@pytest.fixture(scope="module")
def hosts():
    with two_hosts() as made:
        yield made


def train_argv(framework: str, node: int, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "levelfield", "train", "--task", "ctr-dlrm", "--framework", framework,
        "--nnodes", "2", "--node-rank", str(node), "--rdzv-endpoint", ENDPOINT, "--out", str(out), *extra,
    ]  # fmt: skip


def start_both(hosts, framework: str, tmp_path: Path, *extra: str) -> list[subprocess.Popen]:
    return [
        hosts.start(node, train_argv(framework, node, tmp_path / f"node{node}", *extra), stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
        for node in (0, 1)
    ]  # fmt: skip


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_smoke_run_across_two_hosts(hosts, framework, tmp_path):
    procs = start_both(hosts, framework, tmp_path, "--profile", "smoke", "--seed", "7")
    outputs = [proc.communicate(timeout=RUN_TIMEOUT_S) for proc in procs]
    for node, (proc, (_, stderr)) in enumerate(zip(procs, outputs, strict=True)):
        assert proc.returncode == 0, (node, stderr[-3000:])
    records = mllog_records(tmp_path / "node0" / "result_0.txt")
    value = {r["key"]: r["value"] for r in records}
    batch = load_suite().task("ctr-dlrm").hyperparameters["tunable"]["global_batch_size"]["default"]
    assert (value["levelfield_world_size"], value["levelfield_nodes"]) == (2, 2)
    assert (value["global_batch_size"], value["levelfield_local_batch_size"]) == (batch, batch // 2)
    assert value["levelfield_distributed_backend"]
    assert records[-1]["key"] == "run_stop" and records[-1]["metadata"]["status"] in ("success", "aborted")
    # Rank 0 lives on node 0: the other host writes nothing.
    assert not list((tmp_path / "node1").glob("result_*")) and not (tmp_path / "node1" / "summary.json").exists()
    assert "node 1 of 2: done" in outputs[1][0]


def wait_for_run_start(log_dir: Path, procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        for log in log_dir.glob("result_0.txt*"):
            if '"key": "run_start"' in log.read_text():
                return
        assert all(proc.poll() is None for proc in procs), [proc.communicate() for proc in procs]
        time.sleep(0.5)
    raise AssertionError("no run_start on node 0")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_killing_one_host_ends_the_other_with_the_run_aborted(hosts, framework, tmp_path):
    # The submission profile trains for minutes: long enough to lose a host mid-run.
    procs = start_both(hosts, framework, tmp_path, "--eager", "--runs", "1", "--seed", "1")
    wait_for_run_start(tmp_path / "node0", procs)
    hosts.kill(1)
    killed = time.monotonic()
    _, stderr = procs[0].communicate(timeout=DEAD_PEER_BOUND_S + 60)
    assert time.monotonic() - killed < DEAD_PEER_BOUND_S, "node 0 waited for the dead host"
    assert procs[0].returncode != 0, stderr[-3000:]
    assert "Traceback" not in stderr.splitlines()[-1] if stderr else True
    log = next((tmp_path / "node0").glob("result_0.txt*"))
    records = mllog_records(log)
    assert records[-1]["key"] == "run_stop", records[-3:]
    assert records[-1]["metadata"]["status"] == "aborted"
    procs[1].communicate(timeout=60)
