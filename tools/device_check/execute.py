"""Run the plan's steps one after another under one time limit; read each step's figures from its files.

    from levelfield.tools.device_check.execute import run_plan
    results = run_plan(steps, out, time_limit_s=360, repo=Path("."), on_step=write_reports)

Every step is a child process (`python -m levelfield ...` or `python -m pytest ...`) in its own session,
so a step cut by the time limit is killed with its children (LoadGen threads, compile workers). JAX's
memory preallocation is off and TensorFlow grows its GPU memory as it needs it, so the frameworks' own
allocators show what a run uses (and a leftover process never holds the whole GPU).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from levelfield.ground import mllog_keys as LK
from levelfield.tools.device_check.plan import Step

MIN_STEP_S = 5.0  # a step is not started with less time left than this: it could only time out
OUTPUT_TAIL_CHARS = 2000  # of a failed step's output, kept in the report
CHILD_ENV = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",  # JAX takes 75% of the GPU's memory at start otherwise
    "TF_FORCE_GPU_ALLOW_GROWTH": "true",  # TensorFlow likewise takes it all
    "PYTHONUNBUFFERED": "1",
    # The checkout's levelfield/ folder must not shadow an installed (non-editable) levelfield when the
    # child runs from the checkout: node.sh installs it into a folder of its own.
    "PYTHONSAFEPATH": "1",
}


def run_plan(
    steps: list[Step],
    out: Path,
    time_limit_s: float,
    repo: Path,
    on_step: Callable[[list[dict]], None] = lambda results: None,
) -> list[dict]:
    """One result per step (status passed | failed | timed_out | not_run), in plan order; `on_step` after each."""
    deadline = time.monotonic() + time_limit_s
    results = [_pending(step) for step in steps]
    for i, step in enumerate(steps):
        remaining = deadline - time.monotonic()
        if remaining < MIN_STEP_S:
            results[i]["reason"] = f"time limit: {max(remaining, 0):.0f} s of {time_limit_s:.0f} s left"
            continue
        results[i] = _run_step(step, out, remaining, repo)
        on_step(results)
    on_step(results)
    return results


def _pending(step: Step) -> dict:
    return {**asdict(step), "args": list(step.args), "status": "not_run", "seconds": None, "figures": {}}


def _run_step(step: Step, out: Path, timeout_s: float, repo: Path) -> dict:
    result = _pending(step)
    args = [a.format(out=out, id=step.id) for a in step.args]
    result["args"] = args
    log_path = out / "logs" / f"{step.id}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", *args],
            cwd=repo,
            env={**os.environ, **CHILD_ENV, **step.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            returncode = child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            returncode = None
    result["seconds"] = round(time.monotonic() - started, 1)
    result["log"] = str(log_path.relative_to(out))
    try:
        result["figures"] = FIGURES[step.kind](out, step)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:  # a run that wrote nothing usable
        result["figures"] = {}
        result["figures_error"] = f"{type(e).__name__}: {e}"
    if returncode is None:
        result["status"] = "timed_out"
        result["reason"] = f"time limit: killed after {result['seconds']} s"
    elif returncode == 0 and "figures_error" not in result:
        result["status"] = "passed"
    else:
        result["status"] = "failed"
        problem = result.get("figures_error")
        result["reason"] = f"exit status {returncode}" + (f"; {problem}" if problem else "")
    if result["status"] != "passed":
        result["output_tail"] = log_path.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL_CHARS:]
    return result


# -- what each kind of step reports, read from the files the step wrote --------------------------------
def _sysinfo(out: Path, step: Step) -> dict:
    desc = json.loads((out / "system.json").read_text())
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
    folder = out / "runs" / step.id
    summary = json.loads((folder / "summary.json").read_text())
    (run,) = summary["runs"]
    determinism = _mllog_value(folder / "result_0.txt", LK.DETERMINISM) or {}
    keys = ("status", "time_to_train_s", "epochs", "train_samples_per_s", "step_time_ms")
    figures = {key: run.get(key) for key in keys}
    figures.update(
        peak_device_memory_mib=run.get("peak_device_memory_mib"),
        energy_j=run.get("energy_j"),
        global_batch_size=_mllog_value(folder / "result_0.txt", "global_batch_size"),
        precision=_mllog_value(folder / "result_0.txt", LK.PRECISION),
        device=determinism.get("device"),
        precision_switches=determinism.get("framework"),
    )
    if step.kind == "time_to_accuracy" and run.get("status") != "success":
        raise ValueError(f"the run ended {run.get('status')!r}, not 'success' (reached the target)")
    return figures


def _inference(out: Path, step: Step) -> dict:
    record = json.loads((out / "runs" / step.id / "result.json").read_text())
    if record.get("status") != "completed":
        raise ValueError(f"result.json status {record.get('status')!r}, expected 'completed'")
    metric = record["metric"]
    return {
        "metric": metric,
        "value": record.get(metric),
        "result_validity": record.get("result_validity"),
        "query_count": record.get("query_count"),
        "placement": record.get("device"),
        "device": (record.get("determinism") or {}).get("device"),
        "framework_version": record.get("framework_version"),
    }


def _equivalence(out: Path, step: Step) -> dict:
    suite = ET.parse(out / "equivalence.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {name: int(suite.get(name, 0)) for name in ("tests", "failures", "errors", "skipped")}
    counts["frameworks"] = step.env.get("LEVELFIELD_TEST_FRAMEWORKS")
    counts["failed_tests"] = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in suite.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    return counts


FIGURES: dict[str, Callable[[Path, Step], dict]] = {
    "sysinfo": _sysinfo,
    "time_to_accuracy": _training,
    "throughput": _training,
    "inference": _inference,
    "equivalence": _equivalence,
}
