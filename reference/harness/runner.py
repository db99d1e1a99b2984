"""The LoadGen scenario runner behind `levelfield infer`: one harness for every task x framework.

    from levelfield.reference.harness.runner import InferOptions, infer
    result = infer(InferOptions(task_id="ctr-dlrm", framework="jax", scenario="offline",
                                mode="performance", out=Path("runs/ctr-jax-offline"), profile="smoke"))

Steps: read the rules and the user's overrides (a typo fails here, before any
framework is imported), load the weights (a file, or `init_weights(0)`), build
the implementation, warm up (one predict per batch size the scenario will use,
so compilation happens before LoadGen's clock starts; reported as `warmup_s`),
then hand a QSL over the eval set and a SUT around `impl.predict` to LoadGen.
LoadGen writes its own files into `out`; the runner adds `settings.json` (the
exact settings), `result.json` (metric with its unit, LoadGen's verdict and
reasons, fingerprints) and, in accuracy mode, `accuracy.json` (the task's
metric over mlperf_log_accuracy.json, against the rules' threshold).
"""

from __future__ import annotations

import importlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from levelfield.reference.harness import loadgen_config
from levelfield.reference.harness import sut as sut_module
from levelfield.reference.interface import COMPILED, Recipe

from levelfield.errors import UserError
from levelfield.fsutil import atomic_write_text

INIT_WEIGHTS_SEED = 0  # without --weights the runner measures the seed-0 initial model
# Files one run writes into --out; a second run refuses to touch them without --force.
OUTPUT_FILES = ("result.json", "accuracy.json", "settings.json", "mlperf_log_summary.txt",
                "mlperf_log_detail.txt", "mlperf_log_accuracy.json", "mlperf_log_trace.json")


@dataclass
class InferOptions:
    task_id: str
    framework: str
    scenario: str
    mode: str                       # performance | accuracy (LoadGen's PerformanceOnly | AccuracyOnly)
    out: Path
    profile: str = "submission"
    weights: Path | None = None     # None: init_weights(INIT_WEIGHTS_SEED)
    user_conf: Path | None = None
    compile_mode: str = COMPILED
    force: bool = False
    data_dir: str | None = None
    rules_dir: str | None = None
    rules_version: str | None = None


def _prepare_out(out: Path, force: bool) -> None:
    existing = [name for name in OUTPUT_FILES if (out / name).exists()]
    if existing and not force:
        raise UserError(f"{out}: already holds {', '.join(existing)}; not overwriting them",
                        hint="choose another --out, or pass --force to replace them")
    out.mkdir(parents=True, exist_ok=True)
    for name in existing:  # no stale accuracy log from an earlier run may survive next to the new one
        (out / name).unlink()


def _weights(options: InferOptions, spec_module) -> tuple[dict, str]:
    if options.weights is None:
        return spec_module.init_weights(INIT_WEIGHTS_SEED), f"init(seed={INIT_WEIGHTS_SEED})"
    from levelfield.reference.weights import load_weights
    return load_weights(options.weights), str(options.weights)


def infer(options: InferOptions) -> dict:
    """Run one scenario in one mode; returns the result.json content (also written to options.out)."""
    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.registry import load_implementation
    from levelfield.rules import load_suite

    suite = load_suite(options.rules_version, options.rules_dir)
    task = suite.task(options.task_id)
    for kind, value in (("framework", options.framework), ("scenario", options.scenario),
                        ("mode", options.mode), ("profile", options.profile)):
        suite.check_id(kind, value)
    if options.scenario not in task.scenarios:
        raise UserError(f"{task.path}: scenario {options.scenario!r} is not defined for {task.id}")
    common = f"levelfield.reference.{task.package}.common"
    inputs_module = importlib.import_module(f"{common}.inputs")
    spec_module = importlib.import_module(f"{common}.model_spec")
    n_eval = int(task.training_settings(options.profile).get("eval_samples", task.dataset["eval_samples"]))
    eff = loadgen_config.effective_settings(suite, task, options.profile, options.scenario, options.mode,
                                            user_conf=options.user_conf, dataset_samples=n_eval)
    if options.scenario == "offline":
        eff.setdefault("batch_size", inputs_module.MAX_PREDICT_BATCH)
    weights, weights_label = _weights(options, spec_module)
    _prepare_out(options.out, options.force)
    atomic_write_text(options.out / "settings.json", json.dumps(eff, indent=2) + "\n", overwrite=True)

    arrays = load_dataset(task, options.data_dir)
    eval_inputs = {name: array[:n_eval] for name, array in inputs_module.model_inputs(arrays, "eval").items()}
    eval_labels = inputs_module.labels(arrays, "eval")[:n_eval]
    impl = load_implementation(options.task_id, options.framework)(Recipe.from_task(task), mode=options.compile_mode)
    impl.load(weights)

    qsl = sut_module.SampleLibrary(eval_inputs, eff["performance_sample_count"])
    started = time.perf_counter()
    for size in sut_module.warmup_batch_sizes(options.scenario, eff, inputs_module.MAX_PREDICT_BATCH):
        impl.predict(qsl.gather(list(range(size))))
    warmup_s = time.perf_counter() - started

    run_s, system_under_test = _run_loadgen(options, eff, impl, qsl)
    result = _result(options, suite, task, eff, impl, weights_label, warmup_s, run_s, system_under_test)
    if options.mode == "accuracy":
        from levelfield.reference.harness.accuracy import score_accuracy_log
        accuracy = score_accuracy_log(options.out / "mlperf_log_accuracy.json", task, eval_labels)
        atomic_write_text(options.out / "accuracy.json", json.dumps(accuracy, indent=2) + "\n", overwrite=True)
        result["accuracy"] = accuracy
        result["submittable"] = result["submittable"] and accuracy["pass"]
    atomic_write_text(options.out / "result.json", json.dumps(result, indent=2) + "\n", overwrite=True)
    return result


def _run_loadgen(options: InferOptions, eff: dict, impl, qsl) -> tuple[float, object]:
    import mlperf_loadgen as lg

    system_under_test = sut_module.make_sut(
        options.scenario, impl.predict, qsl, batch_size=int(eff.get("batch_size", 1)),
        max_batch_size=int(eff.get("max_batch_size", 1)), batch_timeout_us=int(eff.get("batch_timeout_us", 0)))
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(options.out)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False  # the trace costs time per sample; summary + detail carry the results
    handle_qsl = qsl.construct()
    handle_sut = system_under_test.construct()
    started = time.perf_counter()
    try:
        lg.StartTestWithLogSettings(handle_sut, handle_qsl, loadgen_config.test_settings(eff), log_settings)
    finally:
        run_s = time.perf_counter() - started
        try:
            system_under_test.close()  # stops the Server worker; re-raises a predict failure from it
        finally:
            lg.DestroySUT(handle_sut)
            lg.DestroyQSL(handle_qsl)
    return run_s, system_under_test


def _result(options, suite, task, eff, impl, weights_label, warmup_s, run_s, system_under_test) -> dict:
    from levelfield.reference.harness.environment import environment_fingerprint
    from levelfield.reference.harness.loadgen_results import (
        read_detail,
        scenario_result,
    )
    from levelfield.tools.sysinfo import collect_system_description, fingerprint

    records, errors = read_detail(options.out / "mlperf_log_detail.txt")
    percentile = eff.get("latency_percentile")
    outcome = scenario_result(records, errors, options.scenario, percentile)
    expected_version = str(suite.tools["loadgen"]["version"])
    if outcome["loadgen_version"] and not str(outcome["loadgen_version"]).startswith(expected_version + " "):
        # Results from another LoadGen are not comparable: the run is invalid whatever LoadGen itself says.
        outcome["invalid_reasons"].append(f"LoadGen {outcome['loadgen_version']}, the rules expect {expected_version}")
        outcome["valid"] = False
    result = {
        "task": task.id, "framework": options.framework, "framework_version": impl.version(),
        "compile_mode": impl.mode, "device": impl.device, "scenario": options.scenario, "mode": options.mode,
        "profile": options.profile, "rules_version": suite.version, "weights": weights_label,
    }
    if options.mode == "performance":
        result.update(outcome)
        result["submittable"] = eff["submittable"] and outcome["valid"]
    else:  # LoadGen's validity judges timing, which accuracy mode does not measure
        result.update({"loadgen_version": outcome["loadgen_version"], "loadgen_errors": outcome["loadgen_errors"],
                       "submittable": eff["submittable"] and not errors})
    result.update({
        "loadgen_version_expected": expected_version,
        "warmup_s": warmup_s, "loadgen_run_s": run_s,
        "predict_calls": system_under_test.predict_calls,
        "dataset_samples": eff["dataset_samples"],
        "system_fingerprint": fingerprint(collect_system_description()),
        "environment": environment_fingerprint(options.framework),
    })
    if options.scenario == "server":
        sizes = getattr(system_under_test, "batch_sizes", [])
        result["server_batches"] = {"count": len(sizes), "mean_size": (sum(sizes) / len(sizes)) if sizes else None,
                                    "max_batch_size": eff["max_batch_size"],
                                    "batch_timeout_us": eff["batch_timeout_us"]}
    return result
