"""One framework's share of the demo: train to the demo target, then every LoadGen scenario in both modes.

    from levelfield.cli.demo_stage import StageOptions, train_part, infer_part
    weights = train_part(options)                   # in one spawned child
    infer_part(options, weights, scenarios)         # in another

`levelfield demo` runs each part in its own child process (spawned, not
forked): the frameworks never share one interpreter, and training and
inference never share one either, as on a real system where they are separate
jobs. That matters for the numbers: PyTorch's OpenMP thread pool belongs to
the thread that first used it, and inference runs on the runner's compute
thread, so after training on the main thread every predict paid for a second
pool (fmnist-resnet 4x slower per sample at batch 1 on this CPU). The
inference child builds the implementation once and reuses it for its eight
LoadGen runs, so each batch shape compiles once. Each step prints one line
when it ends, so the demo shows progress even where the progress bars are
hidden (no terminal). A step that fails raises StageFailed naming its output
folder; the parent stops there.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: each part imports the harness when it runs, in its own process
    from levelfield.reference.interface import Implementation
    from levelfield.reference.null_model import NullImplementation

PROFILE = "demo"
MODES = ("performance", "accuracy")
PARENT_POLL_S = 1.0


class StageFailed(Exception):
    """A step of the stage did not produce a result; the message names the folder holding its logs."""


@dataclass
class StageOptions:
    task_id: str
    framework: str
    runs_dir: Path  # <framework>-training and <framework>-<scenario>-<mode> go below it
    system: dict  # the demo's filled-in system description
    org: str
    seed: int
    data_dir: str | None = None
    rules_dir: str | None = None
    rules_version: str | None = None
    weights_file: str | None = None  # the infer part: the weights the train part saved


def say(framework: str, text: str) -> None:
    print(f"  [{framework}] {text}", flush=True)


def train_part(o: StageOptions) -> Path:
    """Train one run to the demo target; the path of its saved weights."""
    from levelfield.harness.options import TrainOptions
    from levelfield.harness.trainer import train, write_summary

    out = o.runs_dir / f"{o.framework}-training"
    started = time.perf_counter()
    summary = train(
        TrainOptions(
            task_id=o.task_id,
            framework=o.framework,
            out=out,
            profile=PROFILE,
            seed=o.seed,
            org=o.org,
            system=o.system,
            data_dir=o.data_dir,
            rules_dir=o.rules_dir,
            rules_version=o.rules_version,
            force=True,
            save_weights=True,
        )
    )
    write_summary(summary, out, o.rules_dir)
    run = summary["runs"][0]
    last = f"{summary['quality_metric']} {run['evals'][-1][1]:.4f}" if run["evals"] else "no evaluation"
    if run["status"] != "success":
        raise StageFailed(
            f"training ended {run['status']} ({run['reason']}, {last} after {run['epochs']} "
            f"epoch(s), demo target {summary['quality_target']}); logs in {out}/"
        )
    say(
        o.framework,
        f"train: {last} >= {summary['quality_target']} at epoch {run['epochs']}, time to target "
        f"{run['time_to_train_s']:.1f} s, first step {run['time_to_first_step_s']:.1f} s "
        f"({time.perf_counter() - started:.0f} s with init)",
    )
    return out / f"weights_{run['index']}.npz"


def infer_step(
    o: StageOptions, impl: Implementation | NullImplementation, weights: Path, scenario: str, mode: str
) -> None:
    from levelfield.harness.options import InferOptions
    from levelfield.harness.run_state import InferAborted
    from levelfield.harness.runner import infer

    out = o.runs_dir / f"{o.framework}-{scenario}-{mode}"
    started = time.perf_counter()
    try:
        result = infer(
            InferOptions(
                task_id=o.task_id,
                framework=o.framework,
                scenario=scenario,
                mode=mode,
                out=out,
                profile=PROFILE,
                weights=weights,
                force=True,
                data_dir=o.data_dir,
                rules_dir=o.rules_dir,
                rules_version=o.rules_version,
                system=o.system,
            ),
            impl=impl,
        )
    except InferAborted as error:
        raise StageFailed(f"{scenario} {mode}: {error.status}: {error}; logs in {out}/") from None
    took = f"({time.perf_counter() - started:.0f} s)"
    if mode == "accuracy":
        acc = result["accuracy"]
        verdict = "pass" if acc["pass"] else "FAIL"
        say(
            o.framework,
            f"{scenario} accuracy: {acc['metric']} {acc['value']:.4f} (threshold "
            f"{acc['threshold']:.4f}) {verdict} {took}",
        )
        return
    from levelfield.cli.commands.infer import performance_line

    reruns = result["sizing"].get("host_load_reruns") or []
    again = f", sized again {len(reruns)}x after the host's load rose" if reruns else ""
    say(
        o.framework,
        f"{scenario} performance: {performance_line(result)}, {result['result_validity'] or 'NO RESULT'}{again} {took}",
    )


def infer_part(o: StageOptions, weights: Path, scenarios: list[str]) -> dict:
    """Every scenario in both modes with one implementation; {step: seconds}."""
    from levelfield.harness.options import InferOptions
    from levelfield.harness.runner import build_implementation, cached_suite

    suite = cached_suite(o.rules_version, o.rules_dir)
    impl = build_implementation(
        InferOptions(
            task_id=o.task_id,
            framework=o.framework,
            scenario=scenarios[0],
            mode=MODES[0],
            out=o.runs_dir,
            profile=PROFILE,
        ),
        suite.task(o.task_id).for_profile(PROFILE),
    )
    timings = {}
    for scenario in scenarios:
        for mode in MODES:
            started = time.perf_counter()
            infer_step(o, impl, weights, scenario, mode)
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


def child_main(part: str, options: StageOptions, scenarios: list[str], report: Path) -> None:
    """Entry point of a spawned child: `part` "train" or "infer"; its outcome (or failure) goes to `report`.

    train reports {"ok", "weights", "timings_s"}; infer reads the weights from options.weights_file.
    """
    from levelfield.ground.errors import UserError
    from levelfield.ground.fsutil import atomic_write_text

    end_with_parent()
    try:
        started = time.perf_counter()
        if part == "train":
            weights = train_part(options)
            outcome = {"ok": True, "weights": str(weights), "timings_s": {"train": time.perf_counter() - started}}
        else:
            outcome = {"ok": True, "timings_s": infer_part(options, Path(options.weights_file), scenarios)}
    except (StageFailed, UserError) as error:
        outcome = {"ok": False, "error": str(error)}
    atomic_write_text(report, json.dumps(outcome, indent=2) + "\n", overwrite=True)
