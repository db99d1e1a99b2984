"""Every reason the processes of a layout could not train the same model as one, found before any starts."""

from __future__ import annotations

import os

from levelfield.ground.errors import UserError
from levelfield.harness.trainer import Trainer
from levelfield.harness.world import Layout


def cpu_share() -> int:
    """CPUs this process may run on: each rank gets an equal share of them (worker.py pins it)."""
    return len(os.sched_getaffinity(0))


def visible_gpus(framework: str) -> int:
    """GPUs the chosen framework would compute on here, 0 on a CPU-only machine.

    PyTorch is asked itself (a CPU build sees no GPU even where one is); for
    TensorFlow and JAX, NVML's count as CUDA_VISIBLE_DEVICES narrows it, so the
    launcher need not start either framework. The GPU paths are untested here
    (CPU-only machine).
    """
    if framework == "pytorch":
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    from levelfield.ground.accelerators import query_nvml

    count = len(query_nvml()["devices"])
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        count = min(count, len([entry for entry in listed.split(",") if entry.strip()]))
    return count


def check_launch(trainer: Trainer, layout: Layout) -> str:
    """Raise UserError for a layout this task and machine cannot run; returns the device type used."""
    impl = trainer.impl_class
    gpus = visible_gpus(impl.framework)
    device = "cuda" if gpus else "cpu"
    if not impl.multiprocess_devices:  # e.g. the standard tasks (docs/scale.md): no multi-process code yet
        raise UserError(
            f"--nproc {layout.nproc} --nnodes {layout.nnodes}: {impl.task_id}/{impl.framework} trains in one "
            f"process only (expected --nproc 1 --nnodes 1)",
            hint="drop --nproc and --nnodes; docs/scale.md says why",
        )
    if device not in impl.multiprocess_devices:
        supported = " or ".join(impl.multiprocess_devices)
        raise UserError(
            f"--nproc {layout.nproc}: {impl.task_id}/{impl.framework} trains with several processes on "
            f"{supported} only, this machine offers {device}",
            hint="use --nproc 1 on this machine; docs/distributed.md says why",
        )
    span = impl.batch_norm_spans.get(device)
    allowed = trainer.settings.get("batch_norm_spans", [])
    if span is not None and span not in allowed:
        raise UserError(
            f"--nproc {layout.nproc}: {impl.task_id}/{impl.framework} normalises batch norm {span} on {device}; "
            f"{trainer.task.path} allows {', '.join(allowed) or 'no batch norm over several processes'}",
            hint="use --nproc 1, or rules that allow it (rules 1.1: --rules-version 1.1)",
        )
    batch = trainer.recipe.global_batch_size
    if batch % layout.world_size:
        raise UserError(
            f"{layout.world_size} processes (--nproc {layout.nproc} x --nnodes {layout.nnodes}): global_batch_size "
            f"{batch} does not split into {layout.world_size} equal shares",
            hint="choose a process count dividing the global batch size, or another global_batch_size (--set)",
        )
    if device == "cuda":
        available, what = gpus, "GPUs on this host (one per process)"
    else:
        # More processes than CPUs would time-slice the ranks and measure the scheduler, not the framework.
        available, what = cpu_share(), "CPUs available to this process"
    if layout.nproc > available:
        raise UserError(
            f"--nproc {layout.nproc}: more processes than the {available} {what}",
            hint=f"use --nproc {available} or fewer",
        )
    return device
