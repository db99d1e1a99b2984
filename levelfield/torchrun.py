"""Several processes for one training run: PyTorch DistributedDataParallel under torchrun's engine.

    levelfield train --task ctr-dlrm --framework pytorch --nproc 2 --profile smoke --out runs/ctr-ddp

`launch()` runs in the `levelfield train` process. It starts N copies of this
module through torch.distributed's elastic launcher, the engine behind
`torchrun`; the command line equivalent is

    python -m torch.distributed.run --standalone --nproc-per-node N --max-restarts 0 \\
        -m levelfield.torchrun OPTIONS.json

Each copy joins the process group (gloo on CPU; nccl with CUDA, untested here
for lack of a GPU; `reference/torch_parallel.py`) and runs the ordinary
`Trainer` with its `World` (`reference/harness/world.py`):

- Batches: the global batch size stays the rules' number. Rank r trains on the
  contiguous slice r of every global batch (`World.share`) of the one data
  order `schedule.batch_order` computes, and DDP averages the gradients of the
  equal shares, which is the gradient of the global batch's mean loss: N
  processes take the same steps as one. BatchNorm needs SyncBatchNorm for that
  (PyTorch supports it on CUDA only), so fmnist-resnet runs multi-process on
  CUDA only (`Implementation.multiprocess_devices`).
- Logging: only rank 0 writes the MLLOG file, summary.json and weights; the
  other ranks log nothing.
- Evaluation: rank 0 evaluates the whole eval set while the others wait; its
  stop decision is broadcast (`World.agree`) so every rank stops at the same epoch.
- Failures: torchrun's agent stops every rank when one exits (no restarts: a
  restart would reset the clock of a timed run); a rank stuck in a collective
  gives up after the task's init bound (`init_limit_s`, 30 min), so nothing
  waits forever. `launch()` turns the first failure into one clear error.
- Signals: the agent forwards SIGINT/SIGTERM to every rank (SIGKILL after 30 s);
  rank 0 then logs `run_stop` aborted and writes summary.json, as one process does.

This module sits beside the CLI, above the harness: it is where PyTorch's
launch engine meets the framework-neutral trainer, so the harness itself
imports no framework. torch is imported only when N > 1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground.errors import EXIT_USER_ERROR, UserError
from levelfield.reference.harness.trainer import Trainer, TrainOptions, write_summary
from levelfield.reference.harness.world import World, check_nproc

if TYPE_CHECKING:  # annotations only: torch is imported only when N > 1
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

# Signals torch's agent catches and forwards to the ranks; restored in the launcher afterwards.
_AGENT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_USER_ERROR_PREFIX = "UserError: "
_HINT_SEPARATOR = "\nhint: "


# -- the launcher (the `levelfield train` process) ------------------------------------------------
def check_launch(trainer: Trainer, nproc: int) -> None:
    """Every reason N processes could not train the same model as one, as a UserError, before any starts."""
    import torch

    impl = trainer.impl_class
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in impl.multiprocess_devices:
        supported = " or ".join(impl.multiprocess_devices) or "no device"
        raise UserError(
            f"--nproc {nproc}: {impl.task_id}/{impl.framework} trains with several processes on "
            f"{supported} only, this machine offers {device}",
            hint="use --nproc 1 on this machine; docs/training.md (several processes) says why",
        )
    batch = trainer.recipe.global_batch_size
    if batch % nproc:
        raise UserError(
            f"--nproc {nproc}: global_batch_size {batch} does not split into {nproc} equal shares",
            hint="choose --nproc dividing the global batch size, or another global_batch_size (--set)",
        )
    if device == "cuda":
        available, what = torch.cuda.device_count(), "CUDA devices (one per process)"
    else:
        # More processes than cores would time-slice the ranks and measure the scheduler, not the framework.
        available, what = len(os.sched_getaffinity(0)), "CPU cores available to this process"
    if nproc > available:
        raise UserError(
            f"--nproc {nproc}: more processes than the {available} {what}", hint=f"use --nproc {available} or fewer"
        )


def launch(options: TrainOptions, nproc: int) -> str | None:
    """Train `options` with `nproc` DDP processes; returns the name of the signal that stopped it, or None.

    Rank 0 writes the result files and summary.json, exactly as one process
    does; a failed rank raises UserError naming the rank and its error.
    """
    check_nproc(options.framework, nproc)
    trainer = Trainer(options)  # validates the options once, here, rather than N times in the ranks
    check_launch(trainer, nproc)
    # Every rank must use the same seeds: a random base seed is drawn once, here.
    options = type(options)(**{**asdict(options), "seed": trainer.seeds[0], "out": Path(options.out).resolve()})
    # torchrun would set 1 thread per rank; give each rank its share of the cores instead (a user's setting wins).
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0)) // nproc)))

    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    scratch = Path(tempfile.mkdtemp(prefix="levelfield-ddp-"))
    previous = {s: signal.getsignal(s) for s in _AGENT_SIGNALS}
    try:
        options_file = scratch / "options.json"
        options_file.write_text(json.dumps(asdict(options), default=str))
        config = LaunchConfig(
            min_nodes=1,
            max_nodes=1,
            nproc_per_node=nproc,
            run_id=uuid.uuid4().hex,
            rdzv_backend="c10d",
            rdzv_endpoint="localhost:0",  # what torchrun --standalone sets
            max_restarts=0,  # a failed rank fails the run: a restart would reset the clock of a timed run
            logs_specs=DefaultLogsSpecs(log_dir=str(scratch / "logs")),
        )  # the ranks' error files
        elastic_launch(config, sys.executable)("-u", "-m", __name__, str(options_file))
        return None
    except SignalException as stopped:  # the agent has already forwarded it to every rank and waited
        return stopped.sigval.name
    except ChildFailedError as failed:
        raise failure_error(failed, nproc) from None
    finally:
        for s, handler in previous.items():  # the agent leaves its own handlers installed
            signal.signal(s, handler)
        shutil.rmtree(scratch, ignore_errors=True)


def failure_error(failed: ChildFailedError, nproc: int) -> UserError:
    """The first failed rank of a ChildFailedError as one UserError (a rank's own UserError as itself)."""
    rank, failure = failed.get_first_failure()
    message = _failure_message(failure)
    if failure.exitcode == EXIT_USER_ERROR and message.startswith(_USER_ERROR_PREFIX):
        text, _, hint = message[len(_USER_ERROR_PREFIX) :].partition(_HINT_SEPARATOR)
        return UserError(text, hint=hint or None)
    others = sorted(r for r in failed.failures if r != rank)
    also = f"; rank(s) {', '.join(map(str, others))} failed after it" if others else ""
    return UserError(
        f"--nproc {nproc}: rank {rank} failed ({_how(failure)}): {message}{also}; torchrun stopped the other ranks",
        hint="the ranks' own messages above ([rank<N>]: lines) show the cause; rank 0's log ends with run_stop aborted",
    )


def _failure_message(failure) -> str:
    message = failure.message
    if isinstance(message, dict):  # read from the rank's error file: {"message": ..., "extraInfo": ...}
        message = message.get("message", "")
    return str(message)


def _how(failure) -> str:
    return f"killed by {failure.signal_name()}" if failure.exitcode < 0 else f"exit code {failure.exitcode}"


# -- a rank (a process torchrun started) ----------------------------------------------------------
def join(timeout_s: float) -> World:
    """Join the process group torchrun's agent set up; the World of this rank."""
    from levelfield.reference.torch_parallel import broadcast_decision, join_process_group

    rank, size, backend = join_process_group(timeout_s)
    return World(
        rank=rank, size=size, backend=backend, broadcast=lambda decision: broadcast_decision(decision, backend)
    )


def worker_main(options_file: str) -> int:
    """One rank: join, train with the World, and (rank 0) write summary.json. Returns the exit code."""
    import torch.distributed as dist
    from torch.distributed.elastic.multiprocessing.errors import get_error_handler

    errors = get_error_handler()  # writes this rank's failure where the agent (and launch()) read it
    errors.initialize()
    try:
        data = json.loads(Path(options_file).read_text())
        trainer = Trainer(TrainOptions(**{**data, "out": Path(data["out"])}))
        # A collective waiting longer than the rules allow for init (compilation included) is stuck.
        trainer.world = join(timeout_s=trainer.settings["init_limit_s"])
        summary = trainer.run()
        if trainer.world.primary:
            write_summary(summary, trainer.o.out, trainer.o.rules_dir)
        return 128 + signal.Signals[trainer.interrupted_by].value if trainer.interrupted_by else 0
    except UserError as error:  # a user's mistake: its message, not a traceback, reaches the launcher
        hint = f"{_HINT_SEPARATOR}{error.hint}" if error.hint else ""
        errors.record_exception(UserError(f"{error}{hint}"))
        return EXIT_USER_ERROR
    except Exception as error:
        errors.record_exception(error)
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    raise SystemExit(worker_main(sys.argv[1]))
