"""Every reason the processes of a layout could not train the same model as one, found before any starts."""

from __future__ import annotations

import os

from levelfield.ground.cluster_managers import SLURM, ManagedRank
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


def check_launch(trainer: Trainer, layout: Layout, managed: ManagedRank | None = None, cpus: int | None = None) -> str:
    """Raise UserError for a layout this task and machine cannot run; returns the device type used.

    `managed`: this process is one rank a workload manager started (managed.py), which sees the devices the
    manager left it: its own GPU under srun --gpus-per-task, its own CPUs where the manager pinned it; the
    errors then name the manager's variables, not options the user did not give.
    `cpus`: the CPUs this process could run on before it took its share (default: now).
    """
    impl = trainer.impl_class
    gpus = visible_gpus(impl.framework)
    device = "cuda" if gpus else "cpu"
    if managed is None:  # the options as the user gave them
        shape, per_node = f"--nproc {layout.nproc} --nnodes {layout.nnodes}", f"--nproc {layout.nproc}"
        count, one = f"--nproc {layout.nproc} x --nnodes {layout.nnodes}", "--nproc 1"
    else:  # the manager's variables
        shape = count = managed.named("SLURM_NTASKS" if managed.manager == SLURM else "OMPI_COMM_WORLD_SIZE")
        per_node = managed.named(
            "SLURM_STEP_TASKS_PER_NODE" if managed.manager == SLURM else "OMPI_COMM_WORLD_LOCAL_SIZE"
        )
        one = "one task"
    if not impl.multiprocess_devices:  # e.g. the standard tasks (docs/scale.md): no multi-process code yet
        raise UserError(
            f"{shape}: {impl.task_id}/{impl.framework} trains in one process only "
            f"(expected {'--nproc 1 --nnodes 1' if managed is None else one})",
            hint=f"{'drop --nproc and --nnodes' if managed is None else 'start one task'}; docs/scale.md says why",
        )
    if device not in impl.multiprocess_devices:
        supported = " or ".join(impl.multiprocess_devices)
        raise UserError(
            f"{per_node}: {impl.task_id}/{impl.framework} trains with several processes on "
            f"{supported} only, this machine offers {device}",
            hint=f"use {one} on this machine; docs/distributed.md says why",
        )
    span = impl.batch_norm_spans.get(device)
    allowed = trainer.settings.get("batch_norm_spans", [])
    if span is not None and span not in allowed:
        raise UserError(
            f"{per_node}: {impl.task_id}/{impl.framework} normalises batch norm {span} on {device}; "
            f"{trainer.task.path} allows {', '.join(allowed) or 'no batch norm over several processes'}",
            hint=f"use {one}, or rules that allow it (rules 1.1: --rules-version 1.1)",
        )
    batch = trainer.recipe.global_batch_size
    if batch % layout.world_size:
        raise UserError(
            f"{layout.world_size} processes ({count}): global_batch_size "
            f"{batch} does not split into {layout.world_size} equal shares",
            hint="choose a process count dividing the global batch size, or another global_batch_size (--set)",
        )
    if device == "cuda":
        available, what = gpus, "GPUs on this host (one per process)"
        if managed is not None and managed.binds_gpus:  # each task sees its own GPU(s) only
            available, what = (layout.nproc if gpus else 0), "tasks given a GPU of their own (--gpus-per-task)"
    else:
        # More processes than CPUs would time-slice the ranks and measure the scheduler, not the framework.
        available, what = (cpus if cpus is not None else cpu_share()), "CPUs available to this process"
        if managed is not None and managed.binds_cpus:  # the manager pinned each rank to CPUs of its own
            available, what = layout.nproc, "ranks the manager pinned to CPUs of their own"
    if layout.nproc > available:
        raise UserError(
            f"{per_node}: more processes than the {available} {what}",
            hint=f"use {available} or fewer per host" if managed else f"use --nproc {available} or fewer",
        )
    return device
