"""What every JAX implementation shares for devices and `levelfield train --nproc N` (jax.distributed).

    from levelfield.reference.frameworks.jax.parallel import placement
    self.place = placement(device)                     # OneDevice in one process, DataParallel in N
    self.state = self.place.replicate(state)           # parameters, optimizer state, training data
    self._step = jax.jit(_train_step, donate_argnums=0, **self.place.jit_options)
    state, loss = self._step(state, *data, self.place.batch(rows), self.place.replicate(lr))  # jax_steps.run_steps
    logits = self._forward(apply_fn, self.place.local(params), x)  # predict: this process's copy, no collective

One process keeps every array on one device, as the implementations always
did. With N processes (`levelfield/cli/launch/`: each rank calls
`join_process_group`, or `join_managed_group` when Slurm or Open MPI started
it, then builds its Implementation) JAX's own data
parallelism applies: a `Mesh` over every process's devices with one axis,
"data"; parameters, optimizer state and the training set replicated on every
device (each process holds a full copy, as it does in one process); each
step's row indices one global array split over "data", built from this
rank's share of the global batch (`World.share`). The jitted step gathers
its rows on each device and XLA's partitioner inserts the all-reduce of the
gradient, so every rank applies the gradient of the global batch's mean
loss. Eager mode runs the same functions op by op on the same global
arrays (each op one small SPMD program, collectives included).

Only rank 0 evaluates, while the others wait in `broadcast_decision`:
`local` hands predict this process's own copy of each replicated array, so
predict runs the one-device jitted forward (a program over the global arrays
would wait for the other processes forever).

Cost on a CPU (measured on this 2-core machine under load, 2 ranks): XLA
combines the gradient's all-reduces into one instruction but its CPU
runtime runs each operand as its own gloo all-reduce, ~4 ms each here
(ctr-dlrm: 17 operands, ~50-70 ms per step against ~5 ms in one process;
one flattened gradient in a shard_map step took ~8 ms). fmnist-resnet's
step is compute-bound and gains from 2 processes.

Imports jax: only the JAX implementations and the launcher's JAX ranks use it.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from levelfield.ground.cluster_managers import OPENMPI, SLURM, ManagedRank
from levelfield.reference.interface import DeviceUnavailable, parse_device

# fp32 means fp32 on a GPU too: XLA:GPU computes float32 dots and convolutions in TF32 at JAX's "default"
# matmul precision (Ampere and later), which the equivalence tolerances and the other frameworks' fp32
# would not match. "highest" asks for full float32 there; bf16/fp16 operands stay in their dtype, so mixed
# precision is untouched. Set once, as this module is imported: before any JAX computation of a
# process, so that no program is compiled under another setting (a rank joining jax.distributed compiles
# its collectives before it imports an implementation: set later, the new key would recompile them
# inside the timed run, which tests/test_jax_parallel.py catches). Logged by jax_steps.determinism_settings.
# No effect on XLA:CPU, which computes float32 in float32 at every setting.
FP32_MATMUL_PRECISION = "highest"
jax.config.update("jax_default_matmul_precision", FP32_MATMUL_PRECISION)

DATA_AXIS = "data"  # the mesh axis every step's batch is split over


def distributed() -> bool:
    """True after `join_process_group` joined 2+ processes (`levelfield train --nproc N`)."""
    # is_initialized first: jax.process_count() would start JAX's backend, and initialize must come first.
    return jax.distributed.is_initialized() and jax.process_count() > 1


class OneDevice:
    """Every array on one device: one process, exactly as without `--nproc`."""

    jit_options: dict = {}

    def __init__(self, device: jax.Device):
        self.device = device

    def replicate(self, tree: Any) -> Any:
        return jax.device_put(tree, self.device)

    def batch(self, rows: np.ndarray) -> jax.Array:
        return jax.device_put(rows, self.device)

    def local(self, tree: Any) -> Any:
        return tree


class DataParallel:
    """Data parallelism over every process's devices (mesh axis "data"), `device` being this process's own."""

    def __init__(self, device: jax.Device):
        self.device = device
        self.mesh = Mesh(np.array(jax.devices()), (DATA_AXIS,))
        self.replicated = NamedSharding(self.mesh, P())
        self.split = NamedSharding(self.mesh, P(DATA_AXIS))
        # The step's outputs stay replicated: the next step then sees the same input shardings (no
        # recompilation), and rank 0 holds the whole state for predict and export.
        self.jit_options = {"out_shardings": self.replicated}

    def replicate(self, tree: Any) -> Any:
        """Each leaf (host value or array) as one global array holding this process's copy on its devices.

        Built from local copies, so no collective runs: every rank passes the same values (the seed's
        weights, the full training set), as in one process.
        """

        def replica(leaf):
            copies = [jax.device_put(leaf, device) for device in self.replicated.addressable_devices]
            return jax.make_array_from_single_device_arrays(copies[0].shape, self.replicated, copies)

        return jax.tree.map(replica, tree)

    def batch(self, rows: np.ndarray) -> jax.Array:
        """This rank's share [b] of a global batch's row indices -> the global [b * processes] index array."""
        return jax.make_array_from_process_local_data(self.split, rows)

    def local(self, tree: Any) -> Any:
        """This process's own copy of each replicated leaf, on `device`: what predict computes with."""
        return jax.tree.map(lambda leaf: leaf.addressable_data(0), tree)


def placement(device: jax.Device) -> OneDevice | DataParallel:
    """Where an Implementation's arrays live: on `device` alone, or data-parallel when 2+ processes joined."""
    return DataParallel(device) if distributed() else OneDevice(device)


def local_device(name: str | None = None) -> jax.Device:
    """This process's device for `name`, else its first one (its GPU where it has one).

    `name` is `--device`'s framework-neutral "cpu", "cuda" or "cuda:N" (interface.parse_device), or a JAX
    device's own name (e.g. "TFRT_CPU_0"). jax.devices() lists every process's devices: the first is rank
    0's, which other ranks cannot use, so only this process's (local) devices are looked at.
    """
    if name is None:
        return jax.local_devices()[0]
    devices = {str(d): d for d in jax.local_devices()}
    if name in devices:
        return devices[name]
    try:
        kind, index = parse_device(name)
    except DeviceUnavailable:
        raise DeviceUnavailable(
            f"no JAX device named {name!r}: expected cpu, cuda or cuda:N, or one of JAX's ({', '.join(devices)})"
        ) from None
    try:
        candidates = jax.local_devices(backend="gpu" if kind == "cuda" else "cpu")
    except RuntimeError:  # no such backend in this jaxlib (no CUDA plugin)
        candidates = []
    if (index or 0) >= len(candidates):
        raise DeviceUnavailable(f"device {name!r}: JAX sees {len(candidates)} {kind} device(s) here")
    return candidates[index or 0]


# -- `levelfield train --nproc N`: what a rank levelfield's launcher started does with jax ------------
def join_process_group(rank: int, size: int, addresses: list[str], timeout_s: float) -> str:
    """Join the run's `size` processes through jax.distributed (rank 0 serves the coordinator at
    addresses[0]); the collectives' backend: gloo between CPUs, nccl between GPUs.

    Must run before anything starts JAX's backend. A process not joined within timeout_s fails.
    """
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # the default today; stated, not assumed
    # Untested here (no GPU): rank r drives its host's GPU LOCAL_RANK, as under torchrun.
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    jax.distributed.initialize(
        coordinator_address=addresses[0],
        num_processes=size,
        process_id=rank,
        local_device_ids=[local_rank],
        initialization_timeout=int(timeout_s),
    )
    return _joined(rank, size)


# jax.distributed's own names for the managers it reads (its cluster_detection_method)
_DETECTION = {SLURM: "slurm", OPENMPI: "ompi"}


def join_managed_group(place: ManagedRank, timeout_s: float) -> str:
    """Join the ranks Slurm or Open MPI started (`srun`/`mpirun levelfield train`) through JAX's own resolver:
    `jax.distributed.initialize` with no address, count or id reads them from the manager's variables (its
    SlurmCluster: the step's first node and a port from the job id; its OmpiCluster: mpirun's address),
    named explicitly because Open MPI under Slurm sets both families. The collectives' backend.
    """
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    # JAX's resolver would give rank r GPU LOCALID, which a task given its own GPU (srun --gpus-per-task)
    # does not see: that task's one GPU is its device 0. Untested here (no GPU).
    devices = {"local_device_ids": [place.gpu_index]} if place.binds_gpus else {}
    jax.distributed.initialize(
        cluster_detection_method=_DETECTION[place.manager], initialization_timeout=int(timeout_s), **devices
    )
    return _joined(place.rank, place.size)


def _joined(rank: int, size: int) -> str:
    """Check the place jax.distributed gave this process, compile the broadcasts; the collectives' backend."""
    if (jax.process_index(), jax.process_count()) != (rank, size):
        raise RuntimeError(f"jax.distributed placed this process at {jax.process_index()} of {jax.process_count()}")
    # Compile the broadcast now: its first use is at the first evaluation, inside the timed run.
    broadcast_decision(False)
    return "gloo" if jax.default_backend() == "cpu" else "nccl"


def broadcast_decision(decision: bool) -> bool:
    """Rank 0's `decision` on every rank (every rank must call this at the same point)."""
    return bool(multihost_utils.broadcast_one_to_all(np.int32(1 if decision else 0)))


def broadcast_seed(seed: int) -> int:
    """Rank 0's integer (a seed, below 2^31: an int32) on every rank (every rank must call this at the same
    point). The same int32 program as broadcast_decision, so nothing new is compiled."""
    return int(multihost_utils.broadcast_one_to_all(np.int32(seed)))


def leave_process_group() -> None:
    """Leave jax.distributed: after every process arrived (its shutdown barrier), or at once when failing.

    Called while an exception propagates (a crash here, or a peer's collective that failed), this process
    ends now, with exit code 1 and the traceback on stderr: its peers may be waiting for it in a
    collective, which only its closed connections end. JAX has no way to leave without the barrier (the
    client's destructor waits in it too), which would hold every rank for shutdown_timeout_seconds (300 s).
    """
    if not jax.distributed.is_initialized():
        return
    if sys.exc_info()[1] is not None:
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    jax.distributed.shutdown()
