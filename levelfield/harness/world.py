"""Each process's place among the processes of one training run, with no framework in sight.

    from levelfield.harness.world import SINGLE, Layout, World
    order = world.share(batch_order(seed, epoch, n, batch))   # this rank's part of every global batch
    if world.agree(reached):                                  # rank 0's decision, on every rank
        ...

The trainer runs with `SINGLE` (one process) unless the launcher
(`levelfield/cli/launch/`, `levelfield train --nproc N [--nnodes M]`, or one rank of
`srun`/`mpirun levelfield train`) hands it the World of a rank. A World only knows
its rank, its size, its nodes, who started the processes (`launcher`, logged as
levelfield_launcher) and how to hear rank 0's decision (`broadcast`, which the framework's own
engine supplies: a torch.distributed, TensorFlow collective or JAX
multi-host broadcast), so the harness imports no framework. `Layout` is where
the processes of a run are, as the command line gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from levelfield.ground.cluster_managers import LEVELFIELD, launcher_record
from levelfield.ground.errors import UserError

if TYPE_CHECKING:  # annotations only: the CLI imports this module at start-up (MAX_NPROC), so it stays light
    import numpy as np

MAX_NPROC = 64  # processes on one node; a sanity bound, devices bound it further (the launcher checks)
MAX_NODES = 1024  # hosts of one run; a sanity bound on --nnodes


@dataclass(frozen=True)
class World:
    """This process's place among the processes of one training run (one process: rank 0 of 1)."""

    rank: int = 0
    size: int = 1  # processes over every node
    nodes: int = 1  # hosts
    backend: str | None = None  # the collectives' transport (e.g. gloo, nccl, grpc+ring); None for one process
    # who started the processes and the manager's ids: ground/cluster_managers.launcher_record
    launcher: dict = field(default_factory=lambda: launcher_record(LEVELFIELD), compare=False)
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


@dataclass(frozen=True)
class Layout:
    """Where the processes of a run are: `nproc` on each of `nnodes` hosts; this host is node `node_rank`,
    and node 0 serves the rendezvous at `endpoint` (host:port) when there are several nodes."""

    nproc: int = 1
    nnodes: int = 1
    node_rank: int = 0
    endpoint: str | None = None

    @property
    def world_size(self) -> int:
        return self.nproc * self.nnodes

    @property
    def first_rank(self) -> int:
        """The global rank of this node's local rank 0 (ranks are numbered node by node)."""
        return self.node_rank * self.nproc

    def address(self) -> tuple[str, int]:
        """The rendezvous endpoint as (host, port); a bracketed IPv6 host loses its brackets."""
        host, _, port = (self.endpoint or "").rpartition(":")
        return host.strip("[]"), int(port)

    def check(self) -> None:
        """Refuse a layout out of range or incomplete, with the option to fix (no import needed)."""
        if not 1 <= self.nproc <= MAX_NPROC:
            raise UserError(
                f"--nproc {self.nproc}: expected a number of processes from 1 to {MAX_NPROC}",
                hint="for example --nproc 2, or leave it out for one process",
            )
        if not 1 <= self.nnodes <= MAX_NODES:
            raise UserError(f"--nnodes {self.nnodes}: expected a number of hosts from 1 to {MAX_NODES}")
        if not 0 <= self.node_rank < self.nnodes:
            raise UserError(
                f"--node-rank {self.node_rank}: expected 0 to {self.nnodes - 1} for --nnodes {self.nnodes}",
                hint="number the hosts 0, 1, ...; node 0 serves the rendezvous",
            )
        if self.nnodes == 1:
            if self.endpoint is not None or self.node_rank:
                raise UserError(
                    "--rdzv-endpoint and --node-rank are for runs over several hosts; got --nnodes 1",
                    hint="give --nnodes M with them, or leave them out",
                )
            return
        if self.endpoint is None:
            raise UserError(
                f"--nnodes {self.nnodes}: every host needs --rdzv-endpoint HOST:PORT, node 0's address",
                hint="for example --rdzv-endpoint 198.18.0.1:29400 on every host",
            )
        host, port = self.endpoint.rpartition(":")[::2]
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise UserError(f"--rdzv-endpoint {self.endpoint}: expected HOST:PORT with a port from 1 to 65535")
