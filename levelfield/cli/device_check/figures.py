"""What each kind of step reports, read back from the files the step wrote (never from its return value,
so a step that ran but wrote nothing usable fails).

    figures = FIGURES["throughput"](out, step)      # ValueError, OSError, KeyError, ...: the step failed

The equivalence steps' figures come from pytest's own reports (pytest_steps.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground import mllog_keys as LK

if TYPE_CHECKING:
    from levelfield.cli.device_check.plan import Step

RUNS = "runs"  # out/runs/<step id>/: each training or inference step's own folder
SYSTEM_FILE = "system.json"
# The errors of reading a run's files that mean "it wrote nothing usable".
UNUSABLE = (OSError, ValueError, KeyError, IndexError, TypeError)


def run_folder(out: Path, step: Step) -> Path:
    return out / RUNS / step.id


def _sysinfo(out: Path, step: Step) -> dict:
    desc = json.loads((out / SYSTEM_FILE).read_text())
    keys = (
        "host_processor_model_name",
        "host_processor_core_count",
        "host_memory_capacity",
        "accelerators_per_node",
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "operating_system",
        "framework",
    )
    return {key: desc.get(key) for key in keys}


def _mllog_value(log: Path, key: str):
    """The value of the first MLLOG line with `key` in a training log (None if absent)."""
    for line in log.read_text(encoding="utf-8").splitlines():
        _, sep, body = line.partition(":::MLLOG ")
        if sep:
            record = json.loads(body)
            if record.get("key") == key:
                return record.get("value")
    return None


def _training(out: Path, step: Step) -> dict:
    folder = run_folder(out, step)
    summary = json.loads((folder / "summary.json").read_text())
    (run,) = summary["runs"]
    log = folder / "result_0.txt"
    determinism = _mllog_value(log, LK.DETERMINISM) or {}
    keys = ("status", "time_to_train_s", "epochs", "train_samples_per_s", "step_time_ms", "time_to_first_step_s")
    figures = {key: run.get(key) for key in keys}
    figures.update(
        peak_device_memory_mib=run.get("peak_device_memory_mib"),
        energy_j=run.get("energy_j"),
        global_batch_size=_mllog_value(log, "global_batch_size"),
        precision=_mllog_value(log, LK.PRECISION),
        device=determinism.get("device"),
        precision_switches=determinism.get("framework"),
    )
    if step.kind == "time_to_accuracy" and run.get("status") != "success":
        raise ValueError(f"the run ended {run.get('status')!r}, not 'success' (reached the target)")
    if step.kind == "throughput" and figures["precision"] != step.precision:
        raise ValueError(f"the log says precision {figures['precision']!r}, expected {step.precision!r}")
    return figures


def _inference(out: Path, step: Step) -> dict:
    record = json.loads((run_folder(out, step) / "result.json").read_text())
    if record.get("status") != "completed":
        raise ValueError(f"result.json status {record.get('status')!r}, expected 'completed'")
    metric = record["metric"]
    return {
        "metric": metric,
        "value": record.get(metric),
        "result_validity": record.get("result_validity"),
        "query_count": record.get("query_count"),
        "warmup_s": record.get("warmup_s"),
        "placement": record.get("device"),
        "device": (record.get("determinism") or {}).get("device"),
        "framework_version": record.get("framework_version"),
    }


FIGURES: dict[str, Callable[[Path, Step], dict]] = {
    "sysinfo": _sysinfo,
    "time_to_accuracy": _training,
    "throughput": _training,
    "inference": _inference,
}
