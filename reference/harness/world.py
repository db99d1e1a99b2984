"""Each process's place among the processes of one training run, with no framework in sight.

    from levelfield.reference.harness.world import SINGLE, World, check_nproc
    order = world.share(batch_order(seed, epoch, n, batch))   # this rank's part of every global batch
    if world.agree(reached):                                  # rank 0's decision, on every rank
        ...

The trainer runs with `SINGLE` (one process) unless the launcher
(`levelfield/torchrun.py`, `levelfield train --nproc N`) hands it the World
of a rank it started. A World only knows its rank, its size and how to hear
rank 0's decision (`broadcast`, which the framework's launcher supplies), so
the harness imports no framework.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError

if TYPE_CHECKING:  # annotations only: the CLI imports this module at start-up (MAX_NPROC), so it stays light
    import numpy as np

MAX_NPROC = 64  # processes on one node; a sanity bound, devices bound it further (the launcher checks)
LAUNCHER_FRAMEWORKS = ("pytorch",)  # torchrun starts PyTorch processes; TF and JAX train in one process


@dataclass(frozen=True)
class World:
    """This process's place among the processes of one training run (one process: rank 0 of 1)."""

    rank: int = 0
    size: int = 1
    backend: str | None = None  # gloo | nccl; None for one process
    # rank 0's bool on every rank (a collective); None for one process
    broadcast: Callable[[bool], bool] | None = field(default=None, compare=False, repr=False)

    @property
    def primary(self) -> bool:
        """Rank 0: the one process that logs, evaluates and saves."""
        return self.rank == 0

    def share(self, batch_indices: np.ndarray) -> np.ndarray:
        """This rank's contiguous part of every global batch: int64 [steps, B] -> [steps, B / size]."""
        if self.size == 1:
            return batch_indices
        per_rank = batch_indices.shape[1] // self.size  # the launcher made B divisible by size
        return batch_indices[:, self.rank * per_rank : (self.rank + 1) * per_rank]

    def agree(self, decision: bool) -> bool:
        """Rank 0's decision on every rank (a broadcast; every rank must call it at the same point)."""
        if self.size == 1:
            return decision
        return self.broadcast(decision)


SINGLE = World()


def check_nproc(framework: str, nproc: int) -> None:
    """Refuse a process count out of range, or N > 1 for frameworks torchrun cannot start (no import needed)."""
    if not 1 <= nproc <= MAX_NPROC:
        raise UserError(
            f"--nproc {nproc}: expected a number of processes from 1 to {MAX_NPROC}",
            hint="for example --nproc 2 (PyTorch DDP), or leave it out for one process",
        )
    if nproc > 1 and framework not in LAUNCHER_FRAMEWORKS:
        raise UserError(
            f"--nproc {nproc}: {framework} trains in one process in levelfield; multi-process "
            f"training (DDP under torchrun) is available for {', '.join(LAUNCHER_FRAMEWORKS)} only",
            hint=f"use --nproc 1 with --framework {framework}, or --framework pytorch --nproc {nproc}",
        )
