"""What every PyTorch implementation shares for devices and `levelfield train --nproc N` (torchrun + DDP).

    from levelfield.reference.torch_parallel import data_parallel, default_device, distributed
    self.device = device or default_device()
    self.train_model = data_parallel(self.model, self.device)   # the model itself in one process

Imports torch: only the PyTorch implementations use it.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

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


def peak_device_memory_mib(device: str) -> float | None:
    """PyTorch's peak allocation on a CUDA device in MiB; None on a CPU."""
    if torch.device(device).type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device) / _BYTES_PER_MIB
