"""One rank of a multi-process run, whichever engine started it: take a CPU share, join, train.

    python -m levelfield.cli.launch.worker PLAN.json

PLAN.json is the launcher's {"options": TrainOptions fields, "nodes": M,
"addresses": every rank's "host:port"}. The rank's place comes from the
environment every launcher here sets, torch's names: RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE. A failure is reported where the launcher reads
it: through torch's error handler under torch's agent, else as JSON in
LEVELFIELD_ERROR_FILE ({"message", "user_error", "hint"}); a user's mistake
travels as its message, never as a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from types import ModuleType

from levelfield.ground.cluster_managers import LEVELFIELD, TORCHRUN, launcher_record
from levelfield.ground.errors import EXIT_USER_ERROR, UserError

ERROR_FILE_ENV = "LEVELFIELD_ERROR_FILE"


def take_cpu_share(local_rank: int, local_size: int) -> list[int]:
    """Pin this process to its equal share of the host's CPUs, before any framework sizes its thread pools.

    Each framework sizes its pools by the CPUs it may run on (TensorFlow and XLA by this affinity, PyTorch
    by OMP_NUM_THREADS, set to the same share), so N ranks on one host never time-slice each other.
    """
    cpus = sorted(os.sched_getaffinity(0))
    share = max(1, len(cpus) // local_size)
    mine = cpus[local_rank * share : (local_rank + 1) * share] or cpus[-share:]
    os.sched_setaffinity(0, mine)
    os.environ.setdefault("OMP_NUM_THREADS", str(len(mine)))
    return mine


class _ErrorReport:
    """Where this rank's failure goes: torch's agent's error file, or LEVELFIELD_ERROR_FILE."""

    def __init__(self, framework: str):
        self.torch = None
        if framework == "pytorch":
            from torch.distributed.elastic.multiprocessing.errors import get_error_handler

            self.torch = get_error_handler()
            self.torch.initialize()

    def user_error(self, error: UserError) -> None:
        from levelfield.cli.launch.failures import HINT_SEPARATOR

        if self.torch is not None:
            hint = f"{HINT_SEPARATOR}{error.hint}" if error.hint else ""
            self.torch.record_exception(UserError(f"{error}{hint}"))
        else:
            self._write({"message": str(error), "user_error": True, "hint": error.hint})

    def crash(self, error: BaseException) -> None:
        if self.torch is not None:
            self.torch.record_exception(error)
        else:
            self._write({"message": f"{type(error).__name__}: {error}", "user_error": False, "hint": None})

    @staticmethod
    def _write(report: dict) -> None:
        path = os.environ.get(ERROR_FILE_ENV)
        if path:
            Path(path).write_text(json.dumps(report))


def parallel_module(framework: str) -> ModuleType:
    """The framework's reference/frameworks/<framework>/parallel.py: join_process_group (bare hosts),
    join_managed_group (Slurm, Open MPI), broadcast_decision, broadcast_seed, leave_process_group.

    Imported here, for the chosen framework only: each of them imports its framework."""
    if framework == "pytorch":
        from levelfield.reference.frameworks.pytorch import parallel as module
    elif framework == "tensorflow":
        from levelfield.reference.frameworks.tensorflow import parallel as module
    else:
        from levelfield.reference.frameworks.jax import parallel as module
    return module


def main(plan_file: str) -> int:
    """One rank: pin, join, train with the World, and (rank 0) write summary.json. Returns the exit code."""
    take_cpu_share(int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"]))
    plan = json.loads(Path(plan_file).read_text())
    options = plan["options"]
    errors = _ErrorReport(options["framework"])
    parallel = parallel_module(options["framework"])
    try:
        from levelfield.harness.options import TrainOptions
        from levelfield.harness.trainer import Trainer, write_summary
        from levelfield.harness.world import World

        trainer = Trainer(TrainOptions(**{**options, "out": Path(options["out"])}))
        # A collective waiting longer than the rules allow for init (compilation included) is stuck.
        rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        backend = parallel.join_process_group(rank, size, plan["addresses"], trainer.settings["init_limit_s"])
        trainer.world = World(
            rank=rank,
            size=size,
            nodes=plan["nodes"],
            backend=backend,
            broadcast=parallel.broadcast_decision,
            launcher=launcher_record(TORCHRUN if options["framework"] == "pytorch" else LEVELFIELD),
        )
        summary = trainer.run()
        if trainer.world.primary:
            write_summary(summary, trainer.o.out, trainer.o.rules_dir)
        return 128 + signal.Signals[trainer.interrupted_by].value if trainer.interrupted_by else 0
    except UserError as error:  # a user's mistake: its message, not a traceback, reaches the launcher
        errors.user_error(error)
        return EXIT_USER_ERROR
    except Exception as error:
        errors.crash(error)
        raise
    finally:
        parallel.leave_process_group()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
