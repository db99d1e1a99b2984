"""Several processes for one training run, started and joined through each framework's own engine.

    levelfield train --task ctr-dlrm --framework jax --nproc 2 --profile smoke --out runs/ctr-2
    levelfield train ... --nproc 1 --nnodes 2 --node-rank R --rdzv-endpoint 198.18.0.1:29400   # on each host

`launch()` runs in the `levelfield train` process of every host. It checks the
layout (`levelfield/harness/world.py` `Layout`), agrees with the other hosts
on the addresses and the seeds (`rendezvous.py`; one host needs none), and
starts this host's processes:

- PyTorch: torch.distributed's elastic launcher, the engine behind `torchrun`
  (`torch_engine.py`); each rank joins the process group (gloo on CPU, nccl on
  CUDA) and trains under DistributedDataParallel.
- TensorFlow and JAX: these frameworks leave starting processes to the user
  (or a cluster manager), so `local_group.py` starts them, one per rank, and
  each joins through its framework: TensorFlow's MultiWorkerMirroredStrategy
  from `TF_CONFIG`, JAX's `jax.distributed.initialize` with gloo collectives on
  CPU (`reference/frameworks/tensorflow/parallel.py`, `reference/frameworks/jax/parallel.py`).

Every rank runs the same `worker.py`: it takes its share of the host's CPUs,
joins, and runs the ordinary `Trainer` with its `World`. Rank 0 alone writes
the MLLOG files and summary.json. A failed rank stops every rank of the host,
and its peers on other hosts see their collectives fail, so no rank waits
forever; the first failure reaches the user as one clear error.

Under a workload manager (`srun levelfield train`, `mpirun -n N levelfield
train`), `launch()` is not used: the manager starts every rank and `managed.py`
runs this process as one of them, joining through its framework's resolver
of that manager; levelfield's starter and rendezvous are for bare hosts.

This package sits beside the CLI, above the harness: it is where the
frameworks' launch engines meet the framework-neutral trainer, so the harness
imports no framework; only the engine of the chosen framework is imported.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from levelfield.cli.launch.checks import check_launch
from levelfield.cli.launch.rendezvous import Cluster, local_cluster, meet
from levelfield.ground.process_tree import LAUNCHER_PID_ENV
from levelfield.harness.options import TrainOptions
from levelfield.harness.trainer import Trainer
from levelfield.harness.world import Layout


def launch(options: TrainOptions, layout: Layout) -> str | None:
    """Train `options` on this host's share of `layout`; the name of the signal that stopped it, or None.

    Rank 0 (on node 0) writes the result files and summary.json exactly as one
    process does; a failed rank raises UserError naming the rank and its error.
    """
    layout.check()
    trainer = Trainer(options)  # validates the options once, here, rather than once per rank
    check_launch(trainer, layout)
    # Every rank must use the same seeds: a random base seed is drawn once, here (node 0's wins).
    seed = trainer.seeds[0]
    if layout.nnodes == 1:
        cluster = local_cluster(layout, seed)
    else:
        cluster = meet(layout, seed, run=_run_identity(options), timeout_s=trainer.settings["init_limit_s"])
    options = type(options)(**{**asdict(options), "seed": cluster.seed, "out": Path(options.out).resolve()})
    # Every rank inherits it: rank 0's meter walks this host's run from here (its peers, their workers),
    # so none of them counts as another process loading the host (levelfield/ground/process_tree.py).
    os.environ[LAUNCHER_PID_ENV] = str(os.getpid())
    if options.framework == "pytorch":
        from levelfield.cli.launch.torch_engine import launch as start
    else:
        from levelfield.cli.launch.local_group import launch as start
    return start(options, layout, cluster)


def _run_identity(options: TrainOptions) -> dict:
    """What every host must agree on to be part of the same run (the rendezvous compares it)."""
    keys = ("task_id", "framework", "profile", "runs", "seeds", "mode", "division", "rules_version", "overrides")
    keys += ("throughput_only", "throughput_steps")  # a throughput-only run and a time-to-accuracy run are not one run
    return {key: getattr(options, key) for key in keys}


__all__ = ["Cluster", "launch"]
