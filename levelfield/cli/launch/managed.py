"""One rank of a run a workload manager started: `srun levelfield train ...`, `mpirun -n N levelfield train ...`.

    srun --nodes 2 --ntasks-per-node 4 levelfield train --task ctr-dlrm --framework jax --out runs/ctr-8
    mpirun -n 2 levelfield train --task ctr-dlrm --framework pytorch --profile smoke --out runs/ctr-2

Slurm or Open MPI starts one `levelfield train` per task; each is one rank, and
neither torchrun nor levelfield's own starter (local_group.py) runs inside the
job. This process reads its place from the manager (levelfield/ground/cluster_managers.py),
checks it against the command line and the machine before any framework starts,
takes its share of the node's CPUs unless the manager pinned it, and joins the
run through its framework's own resolver of that manager
(`join_managed_group` of reference/frameworks/<framework>/parallel.py: JAX's
`jax.distributed.initialize()`, TensorFlow's SlurmClusterResolver, torch's
env://). Rank 0's seed reaches every rank through the framework's broadcast;
rank 0 writes the logs and summary.json, as under `--nproc`.

A failed rank exits with its error (a UserError as one line); the manager ends
the others (mpirun does by default; `srun --kill-on-bad-exit=1`), and a peer
left waiting in a collective gives up after the task's init bound.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace

from levelfield.cli.launch.checks import check_launch, cpu_share
from levelfield.cli.launch.worker import parallel_module, take_cpu_share
from levelfield.ground.cluster_managers import OPENMPI, ManagedRank
from levelfield.ground.errors import EXIT_USER_ERROR, UserError, report_error
from levelfield.harness.options import TrainOptions
from levelfield.harness.world import MAX_NPROC, Layout, World


def check_command(
    place: ManagedRank,
    *,
    nproc: int | None,
    nnodes: int | None,
    node_rank: int | None,
    endpoint: str | None,
    device: str | None,
    framework: str,
) -> Layout:
    """The run's Layout as the manager placed it; UserError naming the manager's variable and its value
    where the command line says otherwise (--nproc and --nnodes may only repeat what the manager says)."""
    per_node = _variable(place, "SLURM_STEP_TASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE")
    count = _variable(place, "SLURM_STEP_NUM_NODES", "OMPI_MCA_orte_num_nodes")
    hint = "each task the manager starts is one rank: drop --nproc and --nnodes, or start as many tasks"
    if place.local_size > MAX_NPROC:  # each rank of a node takes one of the run's ports
        raise UserError(f"{per_node}: more ranks on one node than levelfield's {MAX_NPROC}")
    if nproc is not None and nproc != place.local_size:
        raise UserError(f"{per_node}: {place.local_size} rank(s) on each node, but --nproc {nproc}", hint=hint)
    if nnodes is not None and nnodes != place.nodes:
        raise UserError(f"{count}: {place.nodes} node(s), but --nnodes {nnodes}", hint=hint)
    if node_rank is not None or endpoint is not None:
        option = "--node-rank" if node_rank is not None else "--rdzv-endpoint"
        raise UserError(
            f"{option}: {place.described} placed the ranks ({place.named(*_ids(place))}); levelfield's own "
            "rendezvous is for bare hosts",
            hint=f"drop {option}: the ranks find each other through the manager",
        )
    if device is not None and place.size > 1:
        raise UserError(
            f"--device {device} with {place.size} ranks ({_variable(place, 'SLURM_NTASKS', 'OMPI_COMM_WORLD_SIZE')}): "
            "each rank computes on its own device",
            hint="drop --device, or start one task",
        )
    if place.manager == OPENMPI and place.nodes > 1 and framework == "tensorflow":
        raise UserError(
            f"{count}: TensorFlow ranks under mpirun run on one node: TensorFlow has no Open MPI resolver and "
            "Open MPI's variables name no other host",
            hint="on several nodes start TensorFlow with srun (SlurmClusterResolver) or levelfield --nnodes",
        )
    return Layout(nproc=place.local_size, nnodes=place.nodes)


def run_rank(options: TrainOptions, place: ManagedRank) -> tuple[dict | None, str | None, list[int]]:
    """Train as rank `place.rank`: (rank 0's summary, else None; the name of the signal that stopped it, or
    None; the seeds it trained, rank 0's on every rank)."""
    from levelfield.harness.trainer import Trainer, write_summary

    if place.size == 1:  # the manager started one task: the one-process run, its launcher recorded
        trainer = Trainer(options)
        trainer.world = World(launcher=place.record())
        summary = trainer.run()
        write_summary(summary, trainer.o.out, trainer.o.rules_dir)
        return summary, trainer.interrupted_by, trainer.seeds
    layout = Layout(nproc=place.local_size, nnodes=place.nodes)
    cpus = cpu_share()  # before this rank takes its share
    if not place.binds_cpus:  # before any framework sizes its thread pools
        take_cpu_share(place.local_rank, place.local_size)
    trainer = Trainer(options)
    check_launch(trainer, layout, managed=place, cpus=cpus)
    parallel = parallel_module(options.framework)
    joined = False
    try:
        backend = parallel.join_managed_group(place, trainer.settings["init_limit_s"])
        joined = True
        if options.seed is None and not options.seeds:  # every rank must train the seeds rank 0 drew
            trainer = Trainer(replace(options, seed=parallel.broadcast_seed(trainer.seeds[0])))
        trainer.world = World(
            rank=place.rank,
            size=place.size,
            nodes=place.nodes,
            backend=backend,
            broadcast=parallel.broadcast_decision,
            launcher=place.record(),
        )
        summary = trainer.run()
        if trainer.world.primary:
            write_summary(summary, trainer.o.out, trainer.o.rules_dir)
        return (summary if trainer.world.primary else None), trainer.interrupted_by, trainer.seeds
    except UserError as error:
        if not joined:
            raise
        # Its message as one line, then out at once: peers may wait for this rank in a collective, which only
        # its closed connections end (a group's orderly exit would wait for them; JAX's up to 300 s).
        report_error(error)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_USER_ERROR)
    finally:
        parallel.leave_process_group()


def done_line(place: ManagedRank, interrupted_by: str | None, seeds: list[int]) -> str:
    """What a rank other than 0 prints at its end: the seeds it trained (rank 0 logs the same ones)."""
    how = f"stopped by {interrupted_by}" if interrupted_by else "done"
    return (
        f"rank {place.rank} of {place.size} ({place.described}): {how}, seed(s) {' '.join(map(str, seeds))}; "
        "rank 0 holds the logs and summary.json"
    )


def exit_code(interrupted_by: str | None) -> int:
    return 128 + getattr(signal, interrupted_by).value if interrupted_by else 0


def _variable(place: ManagedRank, slurm: str, openmpi: str) -> str:
    name = openmpi if place.manager == OPENMPI else slurm
    return f"{name}={place.variables.get(name, os.environ.get(name, '(not set)'))}"


def _ids(place: ManagedRank) -> tuple[str, ...]:
    return ("OMPI_COMM_WORLD_RANK",) if place.manager == OPENMPI else ("SLURM_JOB_ID", "SLURM_PROCID")
