"""Re-run an inference result: accuracy from the recorded weights (exactly), performance within the noise.

    document = reproduce_inference(tree, result, options)

Accuracy: each scenario's accuracy run is repeated with the weights the
result used. The tree names them by SHA-256 (result.json `weights_sha256`);
`--weights FILE` supplies the file and is refused when its digest differs,
so an accuracy is never reproduced from other weights than the timed ones.
The same weights, data and implementation give the same predictions, so the
re-scored value must equal the submitted one exactly.

Performance: each scenario's performance run is repeated with the recorded
LoadGen settings the submitter chose (settings.json `user_overrides`) and
compared only on the same hardware (this machine's fingerprint equals the
one the result recorded). As in MLPerf Inference ("replicated results within
5%"), the submission's mean over its repeats may be better than the
reproduction's mean (higher samples/s, or lower latency) by at most the
rules' `checks.replication_tolerance`; a run on a machine that was busier
than the submitter's fails this, so an auditor reproduces on an idle one,
and may try again. On other hardware it is not run: its figures would
compare two machines, not the submission with itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.cli.reproduce.report import document_head, environment_differences, same_hardware
from levelfield.ground import layout as L
from levelfield.ground import mllog_keys as LK
from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import atomic_write_text, sha256_file
from levelfield.ground.loadgen_names import STREAM_SCENARIOS
from levelfield.ground.metrics import repeat_metrics
from levelfield.ground.stats import mean

if TYPE_CHECKING:
    from levelfield.cli.reproduce.options import ReproduceOptions
    from levelfield.cli.reproduce.recipe import OpenTree, TreeResult
    from levelfield.ground.submission.records import InferenceRun

INIT_WEIGHTS = "init(seed=0)"  # the runner's label for its seed-0 initial weights (no file)
# The runner's label for a fidelity-gated task's pinned reference weights (rules 1.2), generated again here
# and checked against the rules' digest by the runner itself (reference/fidelity_weights.py).
FIDELITY_WEIGHTS_PREFIX = "fidelity("


def _result_json(run: InferenceRun) -> dict:
    data = run.result.data if run.result is not None else None
    if not isinstance(data, dict) or data.get("status") != "completed":
        raise UserError(f"{run.folder}/{L.RESULT}: not a completed run's result.json; nothing to replay")
    return data


def _facts(result: dict) -> dict:
    """A result.json's environment facts under the training logs' key names, so one comparison serves both."""
    return {
        LK.FRAMEWORK_VERSION: result.get("framework_version"),
        LK.COMPILE_MODE: result.get("compile_mode"),
        LK.DEVICE: result.get("device"),
        LK.SYSTEM_FINGERPRINT: result.get("system_fingerprint"),
        LK.ENVIRONMENT: result.get("environment"),
    }


def _weights(result: dict, where: str, weights: Path | None) -> Path | None:
    """The weights file to replay with (None: the initial weights), checked against the recorded digest."""
    label, digest = result.get("weights"), result.get("weights_sha256")
    if label == INIT_WEIGHTS or (isinstance(label, str) and label.startswith(FIDELITY_WEIGHTS_PREFIX) and not digest):
        return None
    if "weights_sha256" not in result:
        raise UserError(
            f"{where}: records weights {label!r} but not their SHA-256 (written before levelfield recorded it); "
            "an accuracy cannot be tied to a weights file, so it is not replayed"
        )
    if weights is None:
        raise UserError(f"{where}: the result used weights {label!r} (sha256 {digest}); pass that file with --weights")
    found = sha256_file(weights)
    if found != digest:
        raise UserError(
            f"--weights {weights}: sha256 {found}, expected {digest} (the weights {where} records); refused",
            hint="supply the weights file the submitter used; other weights would reproduce another model",
        )
    return weights


def _user_conf(settings: dict, scenario: str, out: Path) -> Path | None:
    """A user-settings file holding the LoadGen settings the submitter chose (None when they chose none)."""
    chosen = settings.get("user_overrides") if isinstance(settings, dict) else None
    if not chosen:
        return None
    path = out / "user-settings.yaml"
    atomic_write_text(path, json.dumps({scenario: {key: settings[key] for key in chosen}}, indent=2) + "\n")
    return path


def _replay(tree: OpenTree, run: InferenceRun, result: dict, weights: Path | None, out: Path, options) -> dict:
    from levelfield.harness.options import InferOptions
    from levelfield.harness.runner import infer

    out.mkdir(parents=True, exist_ok=True)
    settings = run.settings.data if run.settings is not None else None
    return infer(
        InferOptions(
            task_id=run.task,
            framework=run.framework,
            scenario=run.scenario,
            mode=run.mode,
            out=out / "run",
            profile=str(result.get("profile")),
            weights=weights,
            user_conf=_user_conf(settings, run.scenario, out) if run.mode == L.PERFORMANCE else None,
            compile_mode=str(result.get("compile_mode")),
            precision=result.get("precision") if isinstance(result.get("precision"), str) else None,
            data_dir=options.data_dir,
            rules_dir=options.rules_dir,
            rules_version=tree.suite.version,
        )
    )


def _accuracy(run: InferenceRun, reproduced: dict, out: Path) -> dict:
    submitted = run.accuracy.data if run.accuracy is not None and isinstance(run.accuracy.data, dict) else {}
    mine = json.loads((out / "run" / L.ACCURACY_JSON).read_text(encoding="utf-8"))
    same = submitted.get("value") == mine.get("value")
    figures = {"scenario": run.scenario, "submitted": submitted.get("value"), "reproduced": mine.get("value")}
    reason = (
        None
        if same
        else (
            f"{run.scenario} accuracy: {submitted.get('metric')} {submitted.get('value')!r} submitted, "
            f"{mine.get('value')!r} reproduced from the same weights (expected equal)"
        )
    )
    return {**figures, "equal": same, "reason": reason}


def _performance(tree: OpenTree, run: InferenceRun, reproduced: dict, tolerance: float) -> dict:
    percentile = tree.suite.task(run.task).scenarios[run.scenario].get("latency_percentile")
    name, submitted = repeat_metrics(run.repeats, run.scenario, percentile)
    mine = [r.get(name) for r in reproduced.get("runs", [])]
    return judge_performance(run.scenario, name, submitted, mine, tolerance)


def judge_performance(scenario: str, name: str, submitted: list, reproduced: list, tolerance: float) -> dict:
    """Whether the repeats' mean the submission claims is within `tolerance` of the reproduction's mean, or
    worse than it (a submission slower than its reproduction claims nothing)."""
    submitted = [v for v in submitted if isinstance(v, (int, float)) and not isinstance(v, bool)]
    reproduced = [v for v in reproduced if isinstance(v, (int, float)) and not isinstance(v, bool)]
    figures = {"scenario": scenario, "metric": name, "submitted": submitted, "reproduced": reproduced}
    if not submitted or not reproduced:
        return {**figures, "note": "not compared: a side has no metric", "reason": None}
    claimed, got = mean(submitted), mean(reproduced)
    # Throughput: better is higher; latency (the stream scenarios): better is lower.
    advantage = (claimed - got) / got if scenario not in STREAM_SCENARIOS else (got - claimed) / got
    reason = None
    if advantage > tolerance:
        reason = (
            f"{scenario} performance: {name} {claimed:.6g} submitted (mean of {len(submitted)}), {got:.6g} reproduced "
            f"on the same hardware (mean of {len(reproduced)}): {advantage:.1%} better than the reproduction, "
            f"beyond the rules' replication tolerance of {tolerance:.0%}"
        )
    return {**figures, "advantage": advantage, "tolerance": tolerance, "reason": reason}


def reproduce_inference(tree: OpenTree, result: TreeResult, options: ReproduceOptions) -> dict:
    from levelfield.ground.sysinfo import collect_system_description, fingerprint

    tolerance = tree.suite.checks.get("replication_tolerance")
    runs = sorted(result.inferences, key=lambda r: (r.scenario, r.mode))
    here = fingerprint(collect_system_description())
    accuracy, performance, reasons, differences, how = [], [], [], None, []
    weights_checked: set[str] = set()
    for run in runs:
        if run.mode == L.PERFORMANCE and (options.accuracy_only or tolerance is None):
            why = (
                "--accuracy-only"
                if options.accuracy_only
                else f"rules {tree.suite.version} set no replication_tolerance"
            )
            performance.append({"scenario": run.scenario, "note": f"not run: {why}"})
            continue
        data = _result_json(run)
        weights = _weights(data, f"{run.folder}/{L.RESULT}", options.weights)
        weights_checked.add(data.get("weights_sha256") or str(data.get("weights") or INIT_WEIGHTS))
        out = options.out / "inference" / run.scenario / run.mode
        if run.mode == L.PERFORMANCE:
            hardware = environment_differences(_facts(data), {**_facts(data), LK.SYSTEM_FINGERPRINT: here})
            if not same_hardware(hardware):
                performance.append({"scenario": run.scenario, "note": "not run: the hardware differs"})
                continue
        print(f"reproducing {run.task} {run.framework} {run.scenario} {run.mode} ...", flush=True)
        reproduced = _replay(tree, run, data, weights, out, options)
        if differences is None:
            differences = environment_differences(_facts(data), _facts(reproduced))
        judged = (
            _accuracy(run, reproduced, out)
            if run.mode == L.ACCURACY
            else _performance(tree, run, reproduced, tolerance)
        )
        (accuracy if run.mode == L.ACCURACY else performance).append(judged)
        how.append(f"{run.scenario} {run.mode}")
        if judged["reason"]:
            reasons.append(judged["reason"])
    if not how:
        raise UserError(f"result {result.id}: nothing could be replayed here (no accuracy run; hardware differs)")
    replayed = "for " + ", ".join(how) + f" with weights {', '.join(sorted(weights_checked))}"
    return {
        **document_head("inference", tree, result, replayed),
        "environment_differences": differences or [],
        "accuracy": accuracy,
        "performance": performance,
        "reproduced": not reasons,
        "reasons": reasons,
    }
