"""What every TensorFlow implementation shares for `levelfield train --nproc N`: MultiWorkerMirroredStrategy.

    from levelfield.reference.frameworks.tensorflow.parallel import strategy_scope
    with tf.device(self.device), strategy_scope():   # model and optimizer: mirrored under N processes
        self.model = build_model()
    self._step = train_step(self._gradients, self._apply, compiled)   # steps.py: strategy.run under N

One process (the default) never creates a strategy: `strategy()` is None, `strategy_scope()` is a null
context and `replicated(step)` is `step`, so the one-process path runs exactly the ops it ran before.

N processes: levelfield/cli/launch/worker.py calls `join_process_group` (managed.py `join_managed_group`, under
Slurm or Open MPI) before the implementation is built (the strategy must exist before TensorFlow's runtime
starts). Each rank is one worker of tf.distribute.MultiWorkerMirroredStrategy (TF_CONFIG from the launcher's
addresses, or Slurm's resolver) with one replica, its
CPU share (or its GPU); gradients travel through TensorFlow's collective ops, RING over gRPC on a CPU
(NCCL on GPUs, untested here: no GPU). Keras does the gradient average itself, the idiomatic way: under a
strategy a "sum_over_batch_size" loss is divided by the number of replicas and the optimizer's
apply_gradients all-reduces (SUM) the gradients, which is the gradient of the global batch's mean loss.
Keras skips the division for a loss whose per-sample values are already one scalar (ctr-dlrm's BCE over
[B] logits): `scale_loss_for_distribution` does it there. Eager mode runs strategy.run eagerly (TensorFlow
warns that this is slow; it is the debugging mode).

Imports TensorFlow: only the TensorFlow implementations and the rank worker use it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable

import tensorflow as tf

from levelfield.ground.cluster_managers import SLURM, ManagedRank
from levelfield.ground.errors import UserError
from levelfield.reference.interface import DeviceUnavailable, parse_device

_STRATEGY: tf.distribute.Strategy | None = None
_DECIDE: Callable | None = None  # the traced broadcast of rank 0's value (a flag, a seed)


def tf_device(requested: str | None) -> str:
    """The TensorFlow device name for `--device` (interface.parse_device's names); None: the first GPU, else
    the CPU, as TensorFlow itself would place the ops."""
    gpus = [device.name for device in tf.config.list_logical_devices("GPU")]
    if requested is None:
        return gpus[0] if gpus else "CPU:0"
    kind, index = parse_device(requested)
    if kind == "cpu":
        return "CPU:0"
    if (index or 0) >= len(gpus):
        raise DeviceUnavailable(f"device {requested!r}: TensorFlow sees {len(gpus)} GPU(s) here")
    return gpus[index or 0]


def strategy() -> tf.distribute.Strategy | None:
    """The run's MultiWorkerMirroredStrategy under `levelfield train --nproc N` (N >= 2), else None."""
    return _STRATEGY


def distributed() -> bool:
    """True in a rank of a run of 2+ processes."""
    return _STRATEGY is not None


def num_replicas() -> int:
    """Replicas the gradient is averaged over (1 in one process)."""
    return _STRATEGY.num_replicas_in_sync if _STRATEGY is not None else 1


def strategy_scope() -> contextlib.AbstractContextManager:
    """Where variables must be created to be mirrored (model, optimizer); a null context in one process."""
    return _STRATEGY.scope() if _STRATEGY is not None else contextlib.nullcontext()


def replicated(step: Callable) -> Callable:
    """`step` run by every replica through the strategy (`strategy.run`), its local result back; `step`
    itself in one process. `step` may call collectives (Keras' apply_gradients does)."""
    if _STRATEGY is None:
        return step
    run = _STRATEGY.run

    def run_step(*args):
        (result,) = _STRATEGY.experimental_local_results(run(step, args=args))
        return result

    return run_step


def scale_loss_for_distribution(loss: tf.Tensor) -> tf.Tensor:
    """`loss` / N under N processes, as Keras divides a "sum_over_batch_size" loss in a replica (the
    optimizer then sums the ranks' gradients); `loss` itself in one process."""
    if _STRATEGY is None:
        return loss
    return loss * tf.cast(1.0 / num_replicas(), loss.dtype)


def local_loss(loss: tf.Tensor) -> tf.Tensor:
    """A Keras "sum_over_batch_size" loss computed in a replica, as this rank's mean loss again (Keras
    divides it by the number of replicas so that the all-reduced SUM of gradients is their mean)."""
    return loss * num_replicas() if _STRATEGY is not None else loss


# -- `levelfield train --nproc N`: what a rank the launcher started does with TensorFlow ---------------
def join_process_group(rank: int, size: int, addresses: list[str], timeout_s: float) -> str:
    """Become worker `rank` of the `size` workers at `addresses` (rank order); the collectives' transport.

    Must run before any TensorFlow op: the strategy configures the runtime's collectives at its start.
    `timeout_s` does not bound each collective: TensorFlow's per-collective timeout
    (CommunicationOptions.timeout_seconds, "for debugging") starts a thread per collective, which made a
    2-rank step 1.8x slower on seq-transformer (48 -> 87 ms) and ctr-dlrm (5 -> 9 ms). A rank that dies
    is noticed anyway: levelfield's launcher stops this host's other ranks, and the strategy's health
    check (every 30 s) aborts the collectives of ranks on other hosts.
    """
    if len(addresses) != size or not 0 <= rank < size:
        raise RuntimeError(f"rank {rank} of {size} does not fit the {len(addresses)} addresses {addresses}")
    os.environ["TF_CONFIG"] = json.dumps(
        {"cluster": {"worker": list(addresses)}, "task": {"type": "worker", "index": rank}}
    )
    return _start_strategy(None, rank, size, int(os.environ.get("LOCAL_RANK", "0")))


def join_managed_group(place: ManagedRank, timeout_s: float) -> str:
    """Become worker `place.rank` of the ranks Slurm or Open MPI started (`srun`/`mpirun levelfield train`).

    Slurm: TensorFlow's own SlurmClusterResolver reads the step (SLURM_PROCID, SLURM_STEP_NODELIST,
    SLURM_STEP_TASKS_PER_NODE) and lists worker i of a node at `port_base + i`. levelfield places the GPUs
    itself (auto_set_gpu=False: the resolver would set CUDA_VISIBLE_DEVICES by its own count, which
    fails under srun --gpus-per-task); gpus_per_node=tasks per node and gpus_per_task=1 only make it list
    every task (it lists as many per node as GPU groups fit). It numbers the hosts in sorted order, ranks
    node by node: a rank Slurm placed elsewhere (srun --distribution cyclic) is refused here.
    Open MPI: TensorFlow has no resolver for it and Open MPI's variables name no other host, so one node
    only (the launcher refuses more before any framework starts): TF_CONFIG as the Slurm resolver would
    write it, worker i at localhost:port_base + i. `timeout_s`: as join_process_group.
    """
    if place.manager == SLURM:
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            port_base=place.port_base, gpus_per_node=place.local_size, gpus_per_task=1, auto_set_gpu=False
        )
        listed = resolver.cluster_spec().task_address("worker", place.rank).rpartition(":")[0]
        here = os.environ.get("SLURMD_NODENAME", listed)
        if listed != here:
            raise UserError(
                f"SLURMD_NODENAME={here}: TensorFlow's SlurmClusterResolver places rank {place.rank} on {listed} "
                "(ranks node by node, hosts in sorted order)",
                hint="start the tasks node by node: srun --distribution block (Slurm's default)",
            )
        return _start_strategy(resolver, place.rank, place.size, place.gpu_index)
    if place.nodes != 1:
        raise UserError(f"Open MPI on {place.nodes} nodes: TensorFlow ranks under mpirun run on one node only")
    workers = [f"localhost:{place.port_base + i}" for i in range(place.size)]
    return join_process_group(place.rank, place.size, workers, timeout_s)


def _start_strategy(resolver, rank: int, size: int, gpu_index: int) -> str:
    """The run's MultiWorkerMirroredStrategy from `resolver` (None: TF_CONFIG); the collectives' transport."""
    global _STRATEGY
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        # Untested here (no GPU): rank r drives its host's GPU LOCAL_RANK (its only one where the manager gave
        # it one), one replica per process, as torch_parallel does; the strategy would otherwise make a replica
        # of every visible GPU.
        tf.config.set_visible_devices(gpus[gpu_index], "GPU")
    gpu = bool(gpus)
    implementation = (
        tf.distribute.experimental.CommunicationImplementation.NCCL
        if gpu
        else tf.distribute.experimental.CommunicationImplementation.RING
    )
    options = tf.distribute.experimental.CommunicationOptions(implementation=implementation)
    _STRATEGY = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver, communication_options=options)
    if (_STRATEGY.cluster_resolver.task_id, _STRATEGY.num_replicas_in_sync) != (rank, size):
        raise RuntimeError(
            f"MultiWorkerMirroredStrategy placed this process at {_STRATEGY.cluster_resolver.task_id} "
            f"with {_STRATEGY.num_replicas_in_sync} replicas, expected {rank} of {size}"
        )
    return "nccl" if gpu else "grpc+ring"


def broadcast_decision(decision: bool) -> bool:
    """Rank 0's `decision` on every rank (every rank must call this at the same point)."""
    return bool(broadcast_seed(1 if decision else 0))


def broadcast_seed(seed: int) -> int:
    """Rank 0's integer (a seed, below 2^31) on every rank: an all-reduce (SUM) of rank 0's value and the
    others' 0 (every rank must call this at the same point). In float32, the dtype every collective of the
    strategy here runs in, as its two 16-bit halves: float32 holds every integer below 2^24 exactly."""
    global _DECIDE
    if _DECIDE is None:

        def decide(halves):
            # On this worker's device: a traced argument has none, and a collective needs one.
            with tf.device(_STRATEGY.extended.worker_devices[0]):
                return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(halves))

        _DECIDE = tf.function(replicated(decide))
    mine = [seed >> 16, seed & 0xFFFF] if _STRATEGY.cluster_resolver.task_id == 0 else [0, 0]
    high, low = (int(half) for half in _DECIDE(tf.constant(mine, tf.float32)).numpy())
    return (high << 16) | low


def leave_process_group() -> None:
    """Nothing to tear down: TensorFlow cannot stop the strategy's gRPC server, which ends with the process."""
