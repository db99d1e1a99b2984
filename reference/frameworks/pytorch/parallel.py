"""What every PyTorch implementation shares for devices and `levelfield train --nproc N` (torchrun + DDP).

    from levelfield.reference.frameworks.pytorch.parallel import data_parallel, default_device, distributed
    self.device = device or default_device()
    self.train_model = data_parallel(self.model, self.device)   # the model itself in one process

Imports torch: only the PyTorch implementations and the ranks (levelfield/cli/launch/worker.py for the ranks
torchrun starts, levelfield/cli/launch/managed.py for those Slurm or Open MPI start) use it.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from levelfield.ground.cluster_managers import ManagedRank
from levelfield.reference.interface import DeviceUnavailable, parse_device

_BYTES_PER_MIB = 2**20


def distributed() -> bool:
    """True inside a torchrun process group of 2+ processes (`levelfield train --nproc N`)."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def data_parallel(model: torch.nn.Module, device: str) -> torch.nn.Module:
    """`model` under DDP when torchrun started 2+ processes of this run, else `model` itself."""
    if not distributed():
        return model
    device = torch.device(device)
    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)


def default_device() -> str:
    """The current CUDA device (cuda:0, or cuda:r for rank r under torchrun) when there is one, else CPU.

    The CUDA path is untested here (CPU-only machine): it only moves tensors to that device.
    """
    return f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cpu"


def torch_device(requested: str | None) -> str:
    """The torch device for `--device` (interface.parse_device's names); None: `default_device()`."""
    if requested is None:
        return default_device()
    kind, index = parse_device(requested)
    if kind == "cpu":
        return "cpu"
    count = torch.cuda.device_count()
    index = torch.cuda.current_device() if index is None and count else index
    if index is None or index >= count:
        raise DeviceUnavailable(f"device {requested!r}: PyTorch sees {count} CUDA device(s) here")
    return f"cuda:{index}"


def reset_peak_device_memory(device: str) -> None:
    """Start the peak count afresh on a CUDA device (an implementation being built: a new run), so that
    `peak_device_memory_mib` is its own even where the process ran others before (`levelfield device-check`)."""
    if torch.device(device).type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_device_memory_mib(device: str) -> float | None:
    """PyTorch's peak allocation on a CUDA device in MiB since the last reset; None on a CPU."""
    if torch.device(device).type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device) / _BYTES_PER_MIB


# -- `levelfield train --nproc N`: what a rank torchrun started does with torch -------------------
def join_process_group(
    rank: int, size: int, addresses: list[str], timeout_s: float, gpu_index: int | None = None
) -> str:
    """Join the group torchrun's agent set up (env://: RANK, WORLD_SIZE, MASTER_ADDR/PORT); the backend.

    `rank`, `size` and `addresses` are what the agent's environment says too (the agent placed rank 0's
    store at addresses[0]); a collective waiting longer than timeout_s raises instead of hanging. With a
    GPU, the rank drives GPU `gpu_index` of those it sees (default: LOCAL_RANK).
    """
    if torch.cuda.is_available():
        # Untested here (no GPU): rank r drives cuda:r, as torchvision's references do.
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]) if gpu_index is None else gpu_index)
        backend = "nccl"
    else:
        backend = "gloo"
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    if (dist.get_rank(), dist.get_world_size()) != (rank, size):
        raise RuntimeError(f"torch.distributed placed this process at {dist.get_rank()} of {dist.get_world_size()}")
    return backend


def join_managed_group(place: ManagedRank, timeout_s: float) -> str:
    """Join the ranks Slurm or Open MPI started (`srun`/`mpirun levelfield train`): env:// from the manager's
    variables, as torch.distributed reads them (torch has no resolver of its own for either manager).

    RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE are the manager's; the store lives with rank 0 at
    MASTER_ADDR:MASTER_PORT, the step's first node (or mpirun's host) and the run's port, unless the
    user's environment names them already (as torch recipes for Slurm often do).
    """
    os.environ.setdefault("MASTER_ADDR", place.coordinator_host)
    os.environ.setdefault("MASTER_PORT", str(place.port_base))
    os.environ |= {
        "RANK": str(place.rank),
        "WORLD_SIZE": str(place.size),
        "LOCAL_RANK": str(place.local_rank),
        "LOCAL_WORLD_SIZE": str(place.local_size),
    }
    return join_process_group(place.rank, place.size, [], timeout_s, gpu_index=place.gpu_index)


def broadcast_decision(decision: bool) -> bool:
    """Rank 0's `decision` on every rank (every rank must call this at the same point)."""
    return bool(broadcast_seed(1 if decision else 0))


def broadcast_seed(seed: int) -> int:
    """Rank 0's integer (a seed, below 2^31) on every rank (every rank must call this at the same point)."""
    device = f"cuda:{torch.cuda.current_device()}" if dist.get_backend() == "nccl" else "cpu"
    value = torch.tensor([seed], dtype=torch.int64, device=device)
    dist.broadcast(value, src=0)
    return int(value.item())


def leave_process_group() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
