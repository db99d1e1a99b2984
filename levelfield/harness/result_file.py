"""What result.json says about a completed `levelfield infer` run.

    setup = RunSetup(options=options, suite=suite, task=task, eff=eff, weights_label="init(seed=0)")
    result = build_result(setup, impl, session_outcome)

Identity (task, framework and version, compile mode, device, scenario, mode,
profile, rules version, weights; for ONNX Runtime the model file it served,
`served_graph`), then the figures: performance mode every
repeat with its metric, LoadGen's verdict and reasons, and their mean, stdev
and 95% CI (inference_result.py); accuracy mode LoadGen's version and errors
(its validity judges timing, which accuracy mode does not measure); each
repeat with what it cost (`resources`: the peak memory of the process tree,
the CPU shares of the tree, the host and other processes, energy from a meter
or "not measured", the price per million samples where the system declares an
hourly price; run_meter.py). Then how
the run was sized (the measured batch costs and the sizes chosen, also in
settings.json), the warm-up time, the SUT, and the system and environment
fingerprints.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from levelfield.harness.inference_result import performance_fields, run_entry
from levelfield.harness.run_meter import inference_resources

if TYPE_CHECKING:
    from levelfield.harness.options import InferOptions
    from levelfield.harness.session import LoadGenOutcome, SessionOutcome
    from levelfield.reference.interface import Implementation
    from levelfield.reference.null_model import NullImplementation
    from levelfield.rules import Suite, Task


@dataclass(frozen=True)
class RunSetup:
    """What a run was set up with before LoadGen started: result.json's identity and the settings
    its figures are judged by. Built once by the runner, after --out was prepared."""

    options: InferOptions
    suite: Suite
    task: Task  # for the run's profile
    eff: dict  # the effective settings (settings.json's top level, before sizing fills them in)
    weights_label: str  # the --weights path, or "init(seed=0)"
    weights_sha256: str | None = None  # SHA-256 of the --weights file; None for the initial weights
    precision: str = "fp32"  # --precision, as the rules allow it (rules 1.2: inference.precisions)


def build_result(setup: RunSetup, impl: Implementation | NullImplementation, outcome: SessionOutcome) -> dict:
    """result.json of a completed run: `impl` says which framework ran on what, `outcome`
    (session.py) holds LoadGen's runs, the sizing and the warm-up time."""
    from levelfield.ground.environment import environment_fingerprint
    from levelfield.ground.sysinfo import collect_system_description, fingerprint

    options, suite, task, eff, weights_label = setup.options, setup.suite, setup.task, setup.eff, setup.weights_label
    expected_version = str(suite.tools["loadgen"]["version"])
    percentile = eff.get("latency_percentile")
    result = {
        "status": "completed",
        "task": task.id,
        "framework": options.framework,
        "framework_version": impl.version(),
        "compile_mode": impl.mode,
        "device": impl.device,
        "scenario": options.scenario,
        "mode": options.mode,
        "profile": options.profile,
        "rules_version": suite.version,
        "weights": weights_label,
        "weights_sha256": setup.weights_sha256,
        "precision": precision_in_use(impl, setup.precision),
    }
    if hasattr(impl, "determinism_settings"):  # a framework's run, not the null model's
        # Its compile mode, determinism and precision switches (TF32) and the device as the framework
        # reports it: the same record a training log carries as levelfield_determinism.
        result["determinism"] = impl.determinism_settings()
    if hasattr(impl, "served_graph"):  # a framework that serves a model file it was given (ONNX Runtime)
        # The graph and weights files the session ran, by SHA-256, and how they were built.
        result["served_graph"] = impl.served_graph()
    runs = outcome.runs
    if options.mode == "performance":
        entries = [
            run_entry(run, index, options.scenario, percentile, expected_version)
            for index, run in enumerate(runs, start=1)
        ]
        for entry, run in zip(entries, runs, strict=True):
            if run.resources is not None:  # what the repeat cost: memory, CPU, the host's load, energy, price
                entry["resources"] = inference_resources(run.resources, options.system)
        result.update(performance_fields(entries))
        result["submittable"] = eff["submittable"] and result["valid"]
    else:
        entry = run_entry(runs[0], None, options.scenario, percentile, expected_version)
        result.update(
            {
                "loadgen_version": entry["loadgen_version"],
                "loadgen_errors": entry["loadgen_errors"],
                "loadgen_run_s": entry["loadgen_run_s"],
                "submittable": eff["submittable"] and not runs[0].errors,
            }
        )
    result.update(
        {
            "loadgen_version_expected": expected_version,
            "sizing": {**outcome.sizing, "resized": outcome.resizes},
            "warmup_s": outcome.warmup_s,
            "sut": "fast" if runs[0].fast else "plain",
            "predict_calls": sum(run.predict_calls for run in runs),
            "dataset_samples": eff["dataset_samples"],
            "system_fingerprint": fingerprint(collect_system_description()),
            "environment": environment_fingerprint(options.framework),
        }
    )
    if "null_cost" in eff:  # framework none
        result["null_cost"] = eff["null_cost"]
    if options.scenario == "server":
        result["server_batches"] = server_batches(runs, eff)
    return result


def precision_in_use(impl: Implementation | NullImplementation, asked: str) -> str:
    """The precision the run computed in, read back from the framework's own objects (autocast, dtype
    policies, module dtypes: `hyperparameters()["precision"]`), so result.json states what ran rather than
    what was asked; framework none computes nothing and records what was asked."""
    if not hasattr(impl, "hyperparameters"):
        return asked
    found = impl.hyperparameters().get("precision", asked)
    if found != asked:
        raise RuntimeError(f"{impl.name}: asked to run {asked}, the framework's objects say {found}")
    return found


def server_batches(runs: list[LoadGenOutcome], eff: dict) -> dict:
    """Server's batches over every run: how many, their sizes, and what one took under LoadGen's load
    (to compare with sizing's batch costs, measured alone: the difference is what serving costs)."""
    sizes = [size for run in runs for size in run.batch_sizes]
    times_ms = sorted(ms for run in runs for ms in run.batch_ms)
    return {
        "count": len(sizes),
        "mean_size": statistics.fmean(sizes) if sizes else None,
        "max_size": max(sizes, default=None),
        "mean_ms": statistics.fmean(times_ms) if times_ms else None,
        "p90_ms": times_ms[max(0, math.ceil(0.9 * len(times_ms)) - 1)] if times_ms else None,
        "max_batch_size": eff["max_batch_size"],
        "batch_timeout_us": eff["batch_timeout_us"],
    }
