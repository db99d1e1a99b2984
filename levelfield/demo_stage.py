"""One framework's share of the demo: train to the demo target, then every LoadGen scenario in both modes.

    from levelfield.demo_stage import StageOptions, run_stage
    run_stage(StageOptions(task_id="fmnist-resnet", framework="jax", runs_dir=Path("demo-out/runs"), ...))

`levelfield demo` runs this in a child process per framework (spawned, not
forked): the frameworks never share one interpreter, and each child pays its
framework's import once for its nine runs instead of once per run. Each step
prints one line when it ends, so the demo shows progress even where the
progress bars are hidden (no terminal). A step that fails raises StageFailed
naming its output folder; the parent stops there.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PROFILE = "demo"
MODES = ("performance", "accuracy")
PARENT_POLL_S = 1.0


class StageFailed(Exception):
    """A step of the stage did not produce a result; the message names the folder holding its logs."""


@dataclass
class StageOptions:
    task_id: str
    framework: str
    runs_dir: Path                # <framework>-training and <framework>-<scenario>-<mode> go below it
    system: dict                  # the demo's filled-in system description
    org: str
    seed: int
    data_dir: str | None = None
    rules_dir: str | None = None
    rules_version: str | None = None


def say(framework: str, text: str) -> None:
    print(f"  [{framework}] {text}", flush=True)


def train_step(o: StageOptions) -> Path:
    """Train one run to the demo target; the path of its saved weights."""
    from levelfield.reference.harness.trainer import TrainOptions, train, write_summary

    out = o.runs_dir / f"{o.framework}-training"
    started = time.perf_counter()
    summary = train(TrainOptions(task_id=o.task_id, framework=o.framework, out=out, profile=PROFILE, seed=o.seed,
                                 org=o.org, system=o.system, data_dir=o.data_dir, rules_dir=o.rules_dir,
                                 rules_version=o.rules_version, force=True, save_weights=True))
    write_summary(summary, out, o.rules_dir)
    run = summary["runs"][0]
    last = f"{summary['quality_metric']} {run['evals'][-1][1]:.4f}" if run["evals"] else "no evaluation"
    if run["status"] != "success":
        raise StageFailed(f"training ended {run['status']} ({run['reason']}, {last} after {run['epochs']} "
                          f"epoch(s), demo target {summary['quality_target']}); logs in {out}/")
    say(o.framework, f"train: {last} >= {summary['quality_target']} at epoch {run['epochs']}, time to target "
                     f"{run['time_to_train_s']:.1f} s, first step {run['time_to_first_step_s']:.1f} s "
                     f"({time.perf_counter() - started:.0f} s with init)")
    return out / f"weights_{run['index']}.npz"


def infer_step(o: StageOptions, weights: Path, scenario: str, mode: str) -> None:
    from levelfield.reference.harness.runner import InferAborted, InferOptions, infer

    out = o.runs_dir / f"{o.framework}-{scenario}-{mode}"
    started = time.perf_counter()
    try:
        result = infer(InferOptions(task_id=o.task_id, framework=o.framework, scenario=scenario, mode=mode, out=out,
                                    profile=PROFILE, weights=weights, force=True, data_dir=o.data_dir,
                                    rules_dir=o.rules_dir, rules_version=o.rules_version))
    except InferAborted as error:
        raise StageFailed(f"{scenario} {mode}: {error.status}: {error}; logs in {out}/") from None
    took = f"({time.perf_counter() - started:.0f} s)"
    if mode == "accuracy":
        acc = result["accuracy"]
        verdict = "pass" if acc["pass"] else "FAIL"
        say(o.framework, f"{scenario} accuracy: {acc['metric']} {acc['value']:.4f} (threshold "
                         f"{acc['threshold']:.4f}) {verdict} {took}")
        return
    metric = next((f"{k} {v:.4g}" for k, v in result.items()
                   if k.endswith(("_latency_ms", "samples_per_s")) and v is not None), "no metric")
    say(o.framework, f"{scenario} performance: {metric}, {result['result_validity'] or 'NO RESULT'} {took}")


def run_stage(o: StageOptions, scenarios: list[str]) -> dict:
    """Train, then every scenario in both modes; {step: seconds}."""
    timings = {}
    started = time.perf_counter()
    weights = train_step(o)
    timings["train"] = time.perf_counter() - started
    for scenario in scenarios:
        for mode in MODES:
            started = time.perf_counter()
            infer_step(o, weights, scenario, mode)
            timings[f"{scenario} {mode}"] = time.perf_counter() - started
    return timings


def end_with_parent() -> None:
    """SIGTERM this process once its parent is gone (killed, even with SIGKILL): a demo stopped by its
    user must not keep training in an orphan. The trainer and the runner record the run as aborted."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def child_main(options: StageOptions, scenarios: list[str], report: Path) -> None:
    """Entry point of the spawned child: the stage's timings (or its failure) go to `report` as JSON."""
    from levelfield.errors import UserError
    from levelfield.fsutil import atomic_write_text

    end_with_parent()
    try:
        outcome = {"ok": True, "timings_s": run_stage(options, scenarios)}
    except (StageFailed, UserError) as error:
        outcome = {"ok": False, "error": str(error)}
    atomic_write_text(report, json.dumps(outcome, indent=2) + "\n", overwrite=True)
