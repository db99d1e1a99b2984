"""TensorFlow and JAX ranks: this host's processes, started and watched by levelfield.

Neither framework ships a launcher: TensorFlow's MultiWorkerMirroredStrategy
and JAX's `jax.distributed.initialize` expect one process per worker, started
by the user or a cluster manager (SLURM, Kubernetes), each told the cluster.
This module is that starter for `levelfield train --nproc N`, with the
guarantees torchrun's agent gives PyTorch ranks:

- each rank runs `levelfield.cli.launch.worker` with torch's environment names
  (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), every rank's address
  (LEVELFIELD_ADDRESSES) and a file for its failure (LEVELFIELD_ERROR_FILE);
- when a rank fails, the others on this host get SIGTERM, then SIGKILL after
  GRACE_S (ranks on other hosts see their collectives fail); no restarts;
- SIGINT, SIGTERM, SIGHUP and SIGQUIT to the launcher go to every rank, which
  ends its run as aborted (rank 0 logs it and writes summary.json).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from levelfield.cli.launch.failures import rank_error, shape_text
from levelfield.cli.launch.rendezvous import Cluster
from levelfield.cli.launch.worker import ERROR_FILE_ENV
from levelfield.harness.options import TrainOptions
from levelfield.harness.world import Layout

GRACE_S = 30.0  # as torch's agent: a rank gets this long to end its log after SIGTERM
_POLL_S = 0.1
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def launch(options: TrainOptions, layout: Layout, cluster: Cluster) -> str | None:
    """Start this host's training ranks and wait for them; the name of the signal that stopped them, or None."""
    with tempfile.TemporaryDirectory(prefix="levelfield-plan-") as scratch:
        plan_file = Path(scratch) / "plan.json"
        plan = {"options": asdict(options), "nodes": layout.nnodes, "addresses": cluster.addresses}
        plan_file.write_text(json.dumps(plan, default=str))
        return run_ranks(["-m", "levelfield.cli.launch.worker", str(plan_file)], layout, cluster)


def run_ranks(argv: list[str], layout: Layout, cluster: Cluster) -> str | None:
    """Run this host's ranks of `python -u ARGV...` to the end; the signal that stopped them, or None.

    A failed rank stops the others and raises UserError naming it (its own UserError as itself).
    """
    scratch = Path(tempfile.mkdtemp(prefix="levelfield-ranks-"))
    received: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in _FORWARDED}
    ranks: dict[int, subprocess.Popen] = {}
    try:
        ranks.update(start_ranks(argv, layout, cluster, scratch))
        return _watch(ranks, received, scratch, layout)
    finally:
        _stop(ranks)  # nothing outlives the launcher, whatever ended it
        for s, handler in previous.items():
            signal.signal(s, handler)
        shutil.rmtree(scratch, ignore_errors=True)


def start_ranks(argv: list[str], layout: Layout, cluster: Cluster, scratch: Path) -> dict[int, subprocess.Popen]:
    """Start this host's ranks as `python -u ARGV...`, each with its place in the environment.

    Besides torch's names, MASTER_ADDR/MASTER_PORT name rank 0's reserved address, so a torch.distributed
    rank (env://) joins from this environment too; the tests start one-step ranks of every framework here.
    """
    ranks = {}
    for local_rank in range(layout.nproc):
        rank = layout.first_rank + local_rank
        env = {
            **os.environ,
            "RANK": str(rank),
            "WORLD_SIZE": str(layout.world_size),
            "LOCAL_RANK": str(local_rank),
            "LOCAL_WORLD_SIZE": str(layout.nproc),
            "MASTER_ADDR": cluster.host_of(0),
            "MASTER_PORT": str(cluster.port_of(0)),
            "LEVELFIELD_ADDRESSES": json.dumps(cluster.addresses),
            ERROR_FILE_ENV: str(scratch / f"error_{rank}.json"),
        }
        ranks[rank] = subprocess.Popen([sys.executable, "-u", *argv], env=env)
    return ranks


def _watch(ranks: dict[int, subprocess.Popen], received: list[int], scratch: Path, layout: Layout) -> str | None:
    """Wait until every rank ends, a rank fails (UserError) or a signal comes (its name)."""
    while True:
        if received:
            signum = received[0]
            for proc in ranks.values():
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signum)
            _wait_all(ranks, GRACE_S)
            return signal.Signals(signum).name
        failed = [rank for rank, proc in ranks.items() if proc.poll() not in (None, 0)]
        if failed:
            first = min(failed, key=lambda rank: _ended_at(scratch, rank))
            _stop(ranks)  # the ranks stopped here are not counted as failures of their own
            raise _failure(first, ranks[first].returncode, scratch, layout, sorted(set(failed) - {first}))
        if all(proc.returncode == 0 for proc in ranks.values()):
            return None
        time.sleep(_POLL_S)


def _ended_at(scratch: Path, rank: int) -> float:
    """When a failed rank wrote its error file; a rank without one was killed or crashed, and comes first
    (its peers' errors are most likely the consequence)."""
    try:
        return (scratch / f"error_{rank}.json").stat().st_mtime
    except OSError:
        return float("-inf")


def _failure(rank: int, returncode: int, scratch: Path, layout: Layout, others: list[int]):
    try:
        report = json.loads((scratch / f"error_{rank}.json").read_text())
    except (OSError, ValueError):  # killed before it could write one
        report = {"message": "", "user_error": False, "hint": None}
    how = f"killed by {signal.Signals(-returncode).name}" if returncode < 0 else f"exit code {returncode}"
    return rank_error(
        rank,
        how,
        report["message"],
        user_error=report["user_error"],
        hint=report["hint"],
        others=others,
        engine="levelfield's launcher",
        shape=shape_text(layout),
    )


def _stop(ranks: dict[int, subprocess.Popen]) -> None:
    """SIGTERM every rank still running, SIGKILL what is left after GRACE_S."""
    for proc in ranks.values():
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
    _wait_all(ranks, GRACE_S)


def _wait_all(ranks: dict[int, subprocess.Popen], grace_s: float) -> None:
    deadline = time.monotonic() + grace_s
    for proc in ranks.values():
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
