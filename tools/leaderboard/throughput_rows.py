"""One leaderboard row per training-throughput result (rules 1.2, a tree's <framework>/throughput/ folder).

    from levelfield.tools.leaderboard.throughput_rows import throughput_rows, mark_vs_fastest_throughput
    rows = throughput_rows(clean_tree)
    mark_vs_fastest_throughput(rows)      # each row's Welch mark against the fastest of its peers

A row's number is the mean over its repeats of each repeat's samples/s, with
their stdev and 95% CI; each repeat's figure is the one its step windows give
(levelfield.ground.step_windows.log_figures: what the checker recomputes and
held the logged figure to, TRN027), never a number read elsewhere. A result
trained with `--scaling` also shows its scaling efficiency: the row's mean
samples/s over its processes times the 1-process reference every repeat
logged (levelfield/ground/scaling.py), recomputed here. Peers, for
the Welch marks, are the frameworks on one system and task at the same
processes, global batch size and precision: a throughput at another batch or
precision measures another workload. These rows are never mixed with the time-to-train
rows (rows.py): a throughput result has no time to train.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from levelfield.ground import mllog_keys as LK
from levelfield.ground.scaling import scaling_efficiency, valid_reference_record
from levelfield.ground.stats import ALPHA, spread
from levelfield.ground.step_windows import log_figures
from levelfield.tools.leaderboard.rows import (
    _identity,
    _int,
    _max_of,
    _number,
    _run_index,
    _text,
    against_best,
    processes,
    row_id,
    system_fields,
)

if TYPE_CHECKING:
    from levelfield.ground.parse import MllogFile
    from levelfield.ground.submission.records import TrainingResult
    from levelfield.tools.leaderboard.collect import CleanTree

# The fields that make frameworks peers: one system and task (document.SAME_SYSTEM), one process layout, one
# workload (batch size and precision).
PEERS = ("rules_version", "division", "org", "system", "task", "processes", "process_nodes", "global_batch_size")
PEERS += ("precision",)


def repeat_record(log: MllogFile) -> dict:
    """One repeat: its seed, the figures its step windows give, its step counts and resources."""
    figures = log_figures(log)
    return {
        "file": log.path.rsplit("/", 1)[-1],
        "seed": _int(log.value("seed")),
        "train_samples_per_s": None if figures is None else figures.train_samples_per_s,
        "step_time_ms": None if figures is None else figures.step_time_ms,
        "warmup_steps": None if figures is None else figures.warmup_steps,
        "timed_steps": None if figures is None else figures.timed_steps,
        "time_to_first_step_s": _number(log.value(LK.TIME_TO_FIRST_STEP_S)),
        "peak_host_memory_mib": _number(log.value(LK.PEAK_RSS_MIB)),
        "peak_device_memory_mib": _number(log.value(LK.PEAK_DEVICE_MEMORY_MIB)),
        "energy_j": _number(log.value(LK.ENERGY_J)),
    }


def _values(repeats: list[dict], key: str) -> list[float]:
    return [r[key] for r in repeats if r[key] is not None]


def throughput_row(tree: CleanTree, result: TrainingResult) -> dict:
    logs = sorted(result.logs, key=_run_index)
    repeats = [repeat_record(log) for log in logs]
    identity = _identity(tree, result.system, result.task, result.framework)
    first = logs[0] if logs else None
    value = (lambda key: None) if first is None else first.value  # the first repeat's line of a key
    return {
        "id": row_id("tpt", identity),
        **identity,
        **system_fields(tree.submission, result.system),
        "framework_version": _text(value(LK.FRAMEWORK_VERSION)),
        "compile_mode": _text(value(LK.COMPILE_MODE)),
        **processes(first),
        "global_batch_size": _int(value("global_batch_size")),
        "precision": _text(value(LK.PRECISION)),
        "warmup_steps": _int(value(LK.WARMUP_STEPS)),
        "timed_steps": _int(value(LK.THROUGHPUT_ONLY)),
        "repeats": len(repeats),
        "train_samples_per_s": spread(_values(repeats, "train_samples_per_s")),
        "step_time_ms": spread(_values(repeats, "step_time_ms")),
        "run_values": [r["train_samples_per_s"] for r in repeats],
        "peak_host_memory_mib": _max_of(repeats, "peak_host_memory_mib"),
        "peak_device_memory_mib": _max_of(repeats, "peak_device_memory_mib"),
        "run_details": repeats,
        "scaling": scaling(logs, spread(_values(repeats, "train_samples_per_s"))["mean"]),
        "source": tree.path,
    }


def scaling(logs: list[MllogFile], mean_samples_per_s: float | None) -> dict | None:
    """A `--scaling` result's efficiency: its mean samples/s over (processes x the 1-process reference's
    median), with that reference; None for a result without one, or whose repeats logged different ones."""
    references = [log.value(LK.SCALING_REFERENCE) for log in logs]
    first = references[0] if references else None
    if not valid_reference_record(first) or any(r != first for r in references):
        return None
    processes = _int(logs[0].value(LK.WORLD_SIZE))
    efficiency = scaling_efficiency(mean_samples_per_s, processes, first["train_samples_per_s"]) if processes else None
    return {
        "efficiency": efficiency,
        "reference_samples_per_s": first["train_samples_per_s"],
        "reference_runs": first["runs"],
    }


def throughput_rows(tree: CleanTree) -> list[dict]:
    return [throughput_row(tree, result) for result in tree.submission.throughputs]


def mark_vs_fastest_throughput(rows: list[dict], alpha: float = ALPHA) -> None:
    """Set each row's `vs_fastest`: None without peers (PEERS) or without a figure; {"fastest": true} for the
    peer with the highest mean samples/s; otherwise Welch's test of its repeats against the fastest's, whose
    `within_noise` says whether the gap lies inside their run-to-run noise."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        row["vs_fastest"] = None
        if row["train_samples_per_s"]["mean"] is not None:
            groups.setdefault(tuple(str(row[k]) for k in PEERS), []).append(row)
    for members in groups.values():
        if len(members) < 2:
            continue
        fastest, *others = sorted(members, key=lambda r: (-r["train_samples_per_s"]["mean"], r["framework"]))
        fastest["vs_fastest"] = {"fastest": True}
        for row in others:
            row["vs_fastest"] = {
                "fastest": False,
                **against_best(row["run_values"], fastest["run_values"], fastest, alpha),
            }


def throughput_order(row: dict) -> tuple:
    """Within a task's table: by workload (batch size, precision, processes), the fastest mean first."""
    mean = row["train_samples_per_s"]["mean"]
    workload = (row["global_batch_size"] or 0, row["precision"] or "", row["processes"] or 0)
    return (*workload, mean is None, -(mean or 0.0), row["org"], row["system"], row["framework"])
