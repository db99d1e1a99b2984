"""One training run's record (RunOutcome): what the trainer measured, and what summary.json keeps of it.

    outcome = RunOutcome.started(index=1, seed=7, log_path=Path("out/result_1.txt"))  # aborted, until it gets further
    outcome.status, outcome.reason, outcome.time_to_train_s   # "success", "target reached", 41.2

Apart from trainer.py because throughput_only.py, which the trainer imports, reads it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(kw_only=True)
class RunOutcome:
    """One run's record: summary.json's `runs` entries are these, field by field, in this order."""

    index: int
    seed: int
    status: str  # success | aborted
    reason: str  # target reached | max epochs | interrupted | error | calibration stop | throughput only
    epochs: int
    time_to_train_s: float | None  # run_start -> run_stop, successful runs only
    time_to_first_step_s: float
    peak_rss_mib: float
    evals: list = field(default_factory=list)  # [[epoch, value], ...]
    log: str = ""
    # Measured on GPUs only (None on a CPU-only machine): the framework's peak allocation,
    # NVML's used memory at run_stop, and NVML's energy between run_start and run_stop.
    peak_device_memory_mib: float | None = None
    device_memory_used_mib: float | None = None
    energy_j: float | None = None
    # Throughput of the timed steps (levelfield/harness/throughput.py); None on ranks other than 0 and
    # before the first timed step.
    train_samples_per_s: float | None = None
    step_time_ms: float | None = None
    # `--scaling` (levelfield/ground/scaling.py): train_samples_per_s over N x the 1-process reference's; None
    # without a reference, on ranks other than 0, and before the first timed step
    scaling_efficiency: float | None = None
    # The cost of the timed run (levelfield/harness/run_meter.py): the levelfield_* figures its log holds,
    # by their names without the prefix (peak_tree_rss_mib, others_cpu_share, cpu_energy_j, ...); None on
    # ranks other than 0 and for a run that failed before run_start.
    resources: dict | None = None

    @classmethod
    def started(cls, index: int, seed: int, log_path: Path | None) -> RunOutcome:
        """A run's record before it has done anything: aborted by an interrupt, until run_one gets further
        (run_start makes the reason "max epochs", the target makes it a success)."""
        return cls(
            index=index,
            seed=seed,
            status="aborted",
            reason="interrupted",
            epochs=0,
            time_to_train_s=None,
            time_to_first_step_s=0.0,
            peak_rss_mib=0.0,
            log=str(log_path) if log_path else "",
        )
