"""One leaderboard row per result of a clean tree: training rows and inference rows, as plain dicts.

    from levelfield.tools.leaderboard.rows import training_rows, inference_rows
    rows = training_rows(clean_tree) + inference_rows(clean_tree)

Every number comes from the files the checker just verified, read through the
checker's own records and helpers (`run_status`, `epochs_to_target`,
`repeat_metrics`), so the leaderboard and `levelfield check` cannot disagree
on what a log says. A row's time statistics are the checker's
`training_score` (levelfield.ground.stats.time_to_train): time to train per run =
run_stop time_ms - run_start time_ms (MLPerf's definition; initialisation and
compilation are not timed); a run whose run_stop status is not `success` has
no time and counts as the slowest in the olympic score, as in MLPerf; a
result of one run shows that run's time as `single_run_s`. An inference
scenario's number is the mean of its performance repeats (one value per
run_<i>/ detail log), with their stdev and 95% CI; result.json's own mean is
never read. Units are in the key names.
"""

from __future__ import annotations

import hashlib
import math
import re
from statistics import median
from typing import TYPE_CHECKING

from levelfield.ground import mllog_keys as LK
from levelfield.ground.metrics import repeat_metrics
from levelfield.ground.parse import MllogFile
from levelfield.ground.stats import mean, spread, welch_test
from levelfield.ground.training_log import epochs_to_target, run_status, time_to_target_s, training_score
from levelfield.tools.leaderboard.collect import CleanTree
from levelfield.tools.leaderboard.cost import cost_of_training_run, row_load, scenario_cost, training_cost

if TYPE_CHECKING:  # annotations only: the leaderboard reads the checker's records, never imports the checker
    from levelfield.ground.submission.records import Submission, TrainingResult

S_PER_HOUR = 3600.0
_RUN_INDEX = re.compile(r"result_(\d+)\.txt$")


def _number(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _text(value) -> str | None:
    # Log values are untrusted JSON; the checker vouches for the keys it checks, the tables only show text.
    return value if isinstance(value, str) else None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def row_id(kind: str, identity: dict) -> str:
    """A stable id: the same result gets the same id on every render, whatever else the page holds.

    The hash covers rules version, division, org, system, task and framework; the prefix (`trn-`,
    `inf-`) keeps a result's training and inference rows apart while their hash ties them together.
    """
    key = "/".join(identity[k] for k in ("rules_version", "division", "org", "system", "task", "framework"))
    return f"{kind}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:10]}"


def system_fields(submission: Submission, system_id: str) -> dict:
    """What the tables show about the hardware, from the system description (schema-checked by SYS001)."""
    record = submission.systems.get(system_id)
    data = record.data if record is not None and isinstance(record.data, dict) else {}
    nodes = _int(data.get("number_of_nodes")) or 1
    per_node = _int(data.get("accelerators_per_node")) or 0
    return {
        "system_name": _text(data.get("system_name")) or system_id,
        "system_status": _text(data.get("status")),
        "nodes": nodes,
        "cpu": _text(data.get("host_processor_model_name")),
        "accelerator": _text(data.get("accelerator_model_name")) if per_node else None,
        "accelerator_count": per_node * nodes,
        "node_hourly_price_usd": _number(data.get("hourly_price_usd")),
    }


def _identity(tree, system: str, task: str, framework: str) -> dict:
    sub = tree.submission
    return {
        "rules_version": tree.rules_version,
        "division": sub.division,
        "org": sub.org,
        "system": system,
        "task": task,
        "framework": framework,
    }


def _run_index(log) -> int:
    match = _RUN_INDEX.search(log.path)
    return int(match.group(1)) if match else 0


def run_record(log: MllogFile) -> dict:
    """One training run: status, time to target in s (None when the run failed), and its measurements."""
    status = run_status(log)
    time_s = time_to_target_s(log)
    return {
        "file": log.path.rsplit("/", 1)[-1],
        "seed": _int(log.value("seed")),
        "status": _text(status),
        "time_to_target_s": time_s,
        "epochs_to_target": epochs_to_target(log) if status == "success" else None,
        "time_to_first_step_s": _number(log.value(LK.TIME_TO_FIRST_STEP_S)),
        "peak_host_memory_mib": _number(log.value(LK.PEAK_RSS_MIB)),
        "peak_device_memory_mib": _number(log.value(LK.PEAK_DEVICE_MEMORY_MIB)),
        "energy_j": _number(log.value(LK.ENERGY_J)),
        "train_samples_per_s": _number(log.value(LK.TRAIN_SAMPLES_PER_S)),
        "step_time_ms": _number(log.value(LK.STEP_TIME_MS)),
        **cost_of_training_run(log),  # the cost of the run (tools/leaderboard/cost.py)
    }


def processes(log: MllogFile | None) -> dict:
    """The processes a result trained on (levelfield_world_size, over every node) and the nodes they spanned
    (levelfield_nodes; a log written before that key existed ran on one node). The first run's: every run
    logs the same (TRN020), and the nodes are the system's number_of_nodes (SYS008)."""
    if log is None:
        return {"processes": None, "process_nodes": None}
    nodes = log.first(LK.NODES)
    return {"processes": _int(log.value(LK.WORLD_SIZE)), "process_nodes": 1 if nodes is None else _int(nodes.value)}


def _mean_of(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return mean(values) if values else None


def _median_of(runs: list[dict], key: str) -> float | None:
    """The typical run's figure: a run slowed by the machine's other work moves a median less than a mean."""
    values = [r[key] for r in runs if r[key] is not None]
    return median(values) if values else None


def _max_of(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return max(values) if values else None


def training_row(tree: CleanTree, training: TrainingResult) -> dict:
    logs = sorted(training.logs, key=_run_index)
    runs = [run_record(log) for log in logs]
    identity = _identity(tree, training.system, training.task, training.framework)
    times = training_score(logs, tree.task(training.task).training["olympic_drop"])
    system = system_fields(tree.submission, training.system)
    first = logs[0] if logs else None
    price = system["node_hourly_price_usd"]
    cost = None
    if price is not None and times["olympic_mean"] is not None:
        cost = price * system["nodes"] * times["olympic_mean"] / S_PER_HOUR
    return {
        "id": row_id("trn", identity),
        **identity,
        **system,
        "framework_version": None if first is None else _text(first.value(LK.FRAMEWORK_VERSION)),
        "compile_mode": None if first is None else _text(first.value(LK.COMPILE_MODE)),
        **processes(first),
        # What the runs computed in (levelfield_precision, one per result: TRN020); None in logs without it.
        "precision": None if first is None else _text(first.value(LK.PRECISION)),
        "global_batch_size": None if first is None else _int(first.value("global_batch_size")),
        "quality_metric": tree.task(training.task).quality["metric"],
        "quality_target": tree.task(training.task).quality["target"],
        "runs": len(runs),
        "failed_runs": sum(r["time_to_target_s"] is None for r in runs),
        "time_to_target_s": times,
        "time_to_first_step_s": _mean_of(runs, "time_to_first_step_s"),
        "train_samples_per_s": _median_of(runs, "train_samples_per_s"),
        "step_time_ms": _median_of(runs, "step_time_ms"),
        "peak_host_memory_mib": _max_of(runs, "peak_host_memory_mib"),
        "peak_device_memory_mib": _max_of(runs, "peak_device_memory_mib"),
        "energy_per_run_j": _mean_of(runs, "energy_j"),
        "cost_per_run_usd": cost,
        **training_cost(runs, host_load_threshold(tree)),
        "run_details": runs,
        "source": tree.path,
    }


def host_load_threshold(tree: CleanTree) -> float | None:
    """The rules' checks.host_load_max_others_share for the tree's version (rules 1.2 on); None: not judged."""
    return tree.suite.checks.get("host_load_max_others_share")


def training_rows(tree: CleanTree) -> list[dict]:
    return [training_row(tree, training) for training in tree.submission.trainings]


def better(metric: str | None) -> str | None:
    """Which way a scenario metric improves: latencies `lower`, throughputs (samples_per_s) `higher`."""
    if metric is None:
        return None
    return "lower" if metric.endswith("_latency_ms") else "higher"


def _scenario_entry(tree, task_id: str, scenario: str, performance, accuracy) -> dict:
    """A scenario's figures: its metric over the repeats, their cost, and the accuracy run's score."""
    rules = tree.task(task_id).loadgen_settings(tree.profile, scenario)
    name, values = (
        (None, [])
        if performance is None
        else repeat_metrics(performance.repeats, scenario, rules.get("latency_percentile"))
    )
    values = [_number(v) for v in values]
    stats = spread([v for v in values if v is not None])
    scored = accuracy.accuracy.data if accuracy is not None and accuracy.accuracy is not None else None
    scored = scored if isinstance(scored, dict) else {}
    return {
        "metric": name,
        "better": better(name),
        "run_values": values,
        **stats,
        "accuracy_metric": _text(scored.get("metric")),
        "accuracy": _number(scored.get("value")),
        "accuracy_threshold": _number(scored.get("threshold")),
        **scenario_cost(
            None if performance is None or performance.result is None else performance.result.data,
            host_load_threshold(tree),
        ),
    }


def inference_rows(tree: CleanTree) -> list[dict]:
    """One row per system x task x framework that has inference runs; one entry per scenario present."""
    by_result: dict[tuple, dict] = {}
    for run in tree.submission.inferences:
        by_result.setdefault((run.system, run.task, run.framework), {})[(run.scenario, run.mode)] = run
    rows = []
    for (system_id, task_id, framework), runs in sorted(by_result.items()):
        identity = _identity(tree, system_id, task_id, framework)
        scenarios = {}
        for scenario in tree.suite.scenarios:  # the rules' order, so every page lists scenarios alike
            perf, acc = runs.get((scenario, "performance")), runs.get((scenario, "accuracy"))
            if perf is not None or acc is not None:
                scenarios[scenario] = _scenario_entry(tree, task_id, scenario, perf, acc)
        perf = next((runs[(s, "performance")] for s in scenarios if (s, "performance") in runs), None)
        result = perf.result.data if perf is not None and perf.result is not None else None
        result = result if isinstance(result, dict) else {}
        accuracies = [e["accuracy"] for e in scenarios.values() if e["accuracy"] is not None]
        rows.append(
            {
                "id": row_id("inf", identity),
                **identity,
                **system_fields(tree.submission, system_id),
                "framework_version": _text(result.get("framework_version")),
                "compile_mode": _text(result.get("compile_mode")),
                "accuracy_metric": next(
                    (e["accuracy_metric"] for e in scenarios.values() if e["accuracy_metric"]), None
                ),
                # The lowest over scenarios: each scenario's accuracy run scores the same model, and the
                # table shows the value every scenario reached.
                "accuracy": min(accuracies) if accuracies else None,
                "scenarios": scenarios,
                **row_load(scenarios),
                "source": tree.path,
            }
        )
    return rows


def against_best(run_values: list, best_run_values: list, best: dict, alpha: float) -> dict:
    """A group member measured against the group's best (an inference scenario's, a throughput's): Welch's test
    of the two rows' repeats (the missing ones, None, left out) and the best row's framework and id."""
    test = welch_test([v for v in run_values if v is not None], [v for v in best_run_values if v is not None], alpha)
    return {
        "framework": best["framework"],
        "id": best["id"],
        "p_value": test["p_value"],
        "within_noise": test["within_noise"],
    }
