"""Scaling efficiency: what share of N processes' worth of training throughput N processes deliver.

    from levelfield.ground.scaling import scaling_efficiency, reference_record, scaling_figures
    scaling_efficiency(samples_per_s=150.0, world_size=2, reference_samples_per_s=100.0)   # 0.75
    reference = reference_record(one_process_summary, folder="scaling_reference")
    summary["scaling"] = scaling_figures([150.0, 148.0], world_size=2, reference=reference)

efficiency = (samples/s on N processes) / (N x samples/s on 1 process), both the
training throughput of the same task, framework, recipe (global batch, precision),
profile, steps and seeds, measured side by side on the same hosts: `levelfield train
--throughput-only --nproc N --scaling` first times the runs on one process
(the reference, its logs and summary.json in `<out>/scaling_reference/`), then
the same runs on N. 1.0 is perfect scaling; less is what the collectives, the
split of each global batch and the processes' share of the host cost. On a host
with fewer cores than the 1-process run used, N processes share them, and the
figure says little (docs/scale.md).

The reference enters every N-process run's log (`levelfield_scaling_reference`:
its median samples/s, its runs, where its logs are) and each run logs its own
efficiency against it (`levelfield_scaling_efficiency`); the leaderboard
recomputes a result's efficiency from its samples/s and that reference
(`scaling_efficiency`), never copies it. Nothing here imports a framework.
"""

from __future__ import annotations

import statistics

from levelfield.ground.parse import finite_number, plain_int

# Where `levelfield train --scaling` writes the 1-process reference runs, inside the N-process run's --out.
REFERENCE_FOLDER = "scaling_reference"


def scaling_efficiency(
    samples_per_s: float | None, world_size: int, reference_samples_per_s: float | None
) -> float | None:
    """samples_per_s / (world_size x reference_samples_per_s); None where either figure is missing or not
    positive (a run that timed no step has none). world_size is the N-process run's processes, >= 1."""
    if world_size < 1:
        raise ValueError(f"world_size: expected >= 1 processes, got {world_size}")
    if not _positive(samples_per_s) or not _positive(reference_samples_per_s):
        return None
    return samples_per_s / (world_size * reference_samples_per_s)


def _positive(value: float | None) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def reference_record(summary: dict, folder: str = REFERENCE_FOLDER) -> dict:
    """The 1-process reference as the N-process runs log it, from its summary.json (harness/trainer.py):
    its world size (1), its median samples/s over its runs (None when no run timed a step), how many runs
    gave one, their seeds, and the folder (relative to the N-process run's --out) holding its logs."""
    figure = summary["throughput"]["train_samples_per_s"]
    return {
        "world_size": summary["world_size"],
        "train_samples_per_s": figure["median"],
        "runs": figure["n"],
        "seeds": [run["seed"] for run in summary["runs"]],
        "folder": folder,
    }


def scaling_figures(per_run_samples_per_s: list[float | None], world_size: int, reference: dict) -> dict:
    """summary.json's `scaling`: the N-process runs' median samples/s, the efficiency of that median against
    the reference's median, each run's own efficiency, and the reference itself (reference_record)."""
    present = [v for v in per_run_samples_per_s if v is not None]
    median = statistics.median(present) if present else None
    reference_figure = reference["train_samples_per_s"]
    return {
        "world_size": world_size,
        "train_samples_per_s": median,
        "efficiency": scaling_efficiency(median, world_size, reference_figure),
        "per_run_efficiency": [scaling_efficiency(v, world_size, reference_figure) for v in per_run_samples_per_s],
        "reference": dict(reference),
    }


# levelfield_scaling_reference's shape in words, as the checker reports a value outside it (TRN017).
REFERENCE_DOMAIN = (
    '{"world_size": 1, "train_samples_per_s": a finite number > 0 or null, "runs": an integer >= 0, '
    '"seeds": integers, "folder": a name}'
)


def valid_reference_record(value: object) -> bool:
    """Whether `value` is a reference_record the trainer can have logged (REFERENCE_DOMAIN)."""
    if not isinstance(value, dict) or set(value) != {"world_size", "train_samples_per_s", "runs", "seeds", "folder"}:
        return False
    figure, seeds = value["train_samples_per_s"], value["seeds"]
    return (
        plain_int(value["world_size"])
        and value["world_size"] == 1
        and (figure is None or (finite_number(figure) and figure > 0))
        and plain_int(value["runs"])
        and value["runs"] >= 0
        and isinstance(seeds, list)
        and all(plain_int(seed) for seed in seeds)
        and isinstance(value["folder"], str)
        and bool(value["folder"])
    )
