"""The leaderboard as one CSV: every training and inference row, plus the excluded trees, unrounded.

    from levelfield.tools.leaderboard.render_csv import render_csv
    text = render_csv(doc)

One file so a spreadsheet gets everything: the `table` column says what a
line is (`training`, `training-throughput`, `inference`, `mlcommons-training`,
`mlcommons-inference`, `excluded`); fields a kind lacks are empty. A
training-throughput line (rules 1.2) fills the `throughput_*` columns: the
mean, stdev, 95% CI and count of its repeats' samples/s and step time, each
repeat's samples/s (space-separated) and its Welch mark.
An inference scenario gets a group of columns named `<scenario>_<metric>_...`:
the mean, stdev, 95% CI and count of its repeats, each repeat's value
(space-separated, run_1 first) and its Welch mark against the best framework.
Every line names the rules profile its runs were judged against, so a demo
line pasted elsewhere still says it is not a result.
Numbers keep full precision (Python's shortest round-trip repr). A text cell
from a submission that starts with = + - @ is prefixed with ' so a
spreadsheet shows it instead of evaluating it as a formula.
"""

from __future__ import annotations

import csv
import io

from levelfield.ground.loadgen_names import SCENARIO_NAMES

IDENTITY = [
    "id",
    "rules_version",
    "division",
    "task",
    "org",
    "system",
    "system_name",
    "system_status",
    "nodes",
    "cpu",
    "accelerator",
    "accelerator_count",
    "node_hourly_price_usd",
    "framework",
    "framework_version",
    "compile_mode",
]
TRAINING = {
    "processes": ("processes",),
    "process_nodes": ("process_nodes",),
    "precision": ("precision",),
    "quality_metric": ("quality_metric",),
    "quality_target": ("quality_target",),
    "global_batch_size": ("global_batch_size",),
    "runs": ("runs",),
    "failed_runs": ("failed_runs",),
    "time_to_target_olympic_mean_s": ("time_to_target_s", "olympic_mean"),
    "time_to_target_single_run_s": ("time_to_target_s", "single_run_s"),
    "time_to_target_mean_s": ("time_to_target_s", "mean"),
    "time_to_target_stdev_s": ("time_to_target_s", "stdev"),
    "time_to_target_ci95_low_s": ("time_to_target_s", "ci95_low"),
    "time_to_target_ci95_high_s": ("time_to_target_s", "ci95_high"),
    "time_to_target_successful_runs": ("time_to_target_s", "n"),
    "vs_fastest_framework": ("vs_fastest", "framework"),
    "vs_fastest_p_value": ("vs_fastest", "p_value"),
    "within_noise_of_fastest": ("vs_fastest", "within_noise"),
    "train_samples_per_s": ("train_samples_per_s",),
    "step_time_ms": ("step_time_ms",),
    "time_to_first_step_s": ("time_to_first_step_s",),
    "peak_host_memory_mib": ("peak_host_memory_mib",),
    "peak_device_memory_mib": ("peak_device_memory_mib",),
    "energy_per_run_j": ("energy_per_run_j",),
    "cost_per_run_usd": ("cost_per_run_usd",),
    "peak_tree_memory_mib": ("peak_tree_memory_mib",),
    "process_cpu_share": ("process_cpu_share",),
    "others_cpu_share_max": ("others_cpu_share_max",),
    "host_loaded": ("host_loaded",),
    "cpu_energy_per_run_j": ("cpu_energy_per_run_j",),
    "price_per_run_usd": ("price_per_run_usd",),
}
# Training-throughput rows: column -> the row's key (a tuple: a key inside a spread or vs_fastest).
THROUGHPUT = {
    "precision": ("precision",),
    "throughput_warmup_steps": ("warmup_steps",),
    "throughput_timed_steps": ("timed_steps",),
    "throughput_repeats": ("repeats",),
    "throughput_samples_per_s_mean": ("train_samples_per_s", "mean"),
    "throughput_samples_per_s_stdev": ("train_samples_per_s", "stdev"),
    "throughput_samples_per_s_ci95_low": ("train_samples_per_s", "ci95_low"),
    "throughput_samples_per_s_ci95_high": ("train_samples_per_s", "ci95_high"),
    "throughput_samples_per_s_runs": ("run_values",),
    "throughput_step_time_ms_mean": ("step_time_ms", "mean"),
    "throughput_step_time_ms_ci95_low": ("step_time_ms", "ci95_low"),
    "throughput_step_time_ms_ci95_high": ("step_time_ms", "ci95_high"),
    "throughput_vs_fastest_framework": ("vs_fastest", "framework"),
    "throughput_vs_fastest_p_value": ("vs_fastest", "p_value"),
    "throughput_within_noise_of_fastest": ("vs_fastest", "within_noise"),
    "throughput_scaling_efficiency": ("scaling", "efficiency"),
    "throughput_scaling_reference_samples_per_s": ("scaling", "reference_samples_per_s"),
}
# Per scenario: column suffix -> the scenario entry's key (a tuple: a key inside vs_best).
SCENARIO = {
    "mean": ("mean",),
    "stdev": ("stdev",),
    "ci95_low": ("ci95_low",),
    "ci95_high": ("ci95_high",),
    "repeats": ("n",),
    "runs": ("run_values",),
    "vs_best_framework": ("vs_best", "framework"),
    "vs_best_p_value": ("vs_best", "p_value"),
    "within_noise_of_best": ("vs_best", "within_noise"),
    "peak_tree_memory_mib": ("peak_tree_memory_mib",),
    "process_cpu_share": ("process_cpu_share",),
    "others_cpu_share_max": ("others_cpu_share_max",),
    "host_loaded": ("host_loaded",),
    "cpu_energy_per_1000_samples_j": ("cpu_energy_per_1000_samples_j",),
    "gpu_energy_per_1000_samples_j": ("gpu_energy_per_1000_samples_j",),
    "price_usd_per_million_samples": ("price_usd_per_million_samples",),
}
# MLCommons Training rows (tools/leaderboard/mlcommons.py): the score and how it was reached; `task` holds
# the benchmark, `org` the submitter, `rules_version` the MLCommons ruleset.
MLCOMMONS = ("score_min", "scaling_factor", "rcp", "rcp_passed")
# MLCommons Inference rows: `task` holds the model, `org` the submitter, `rules_version` the round; `value` is the
# round's official figure, read from the detail-log key `field`.
MLCOMMONS_INFERENCE = ("scenario", "metric", "value", "field", "validity", "loadgen_version", "compliance")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):  # a scenario's repeats: numbers, space-separated
        return " ".join(cell(v) or "null" for v in value)
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def _get(row: dict, keys: tuple):
    for key in keys:
        row = row.get(key) if isinstance(row, dict) else None
    return row


def scenario_fields(doc: dict) -> list[tuple[str, str, str, tuple]]:
    """(column, scenario, metric, keys in its entry) for every scenario metric in the document, in the
    rules' scenario order, each with the columns of SCENARIO."""
    found = {(s, e["metric"]) for row in doc["inference"] for s, e in row["scenarios"].items() if e["metric"]}
    order = list(SCENARIO_NAMES)
    ranked = sorted(found, key=lambda sm: (order.index(sm[0]) if sm[0] in order else len(order), sm))
    return [(f"{s}_{m}_{suffix}", s, m, keys) for s, m in ranked for suffix, keys in SCENARIO.items()]


def render_csv(doc: dict) -> str:
    scenarios = scenario_fields(doc)
    header = [
        "table",
        "profile",
        *IDENTITY,
        *TRAINING,
        *THROUGHPUT,
        *(name for name, _, _, _ in scenarios),
        "accuracy_metric",
        "accuracy",
        *MLCOMMONS,
        *MLCOMMONS_INFERENCE,
        "source",
        "finding_codes",
    ]
    lines = []
    for row in doc["training"]:
        line = {
            "table": "training",
            **{k: row.get(k) for k in IDENTITY},
            **{name: _get(row, keys) for name, keys in TRAINING.items()},
            "source": row["source"],
        }
        lines.append(line)
    for row in doc.get("throughput", []):
        lines.append(
            {
                "table": "training-throughput",
                **{k: row.get(k) for k in IDENTITY},
                **{k: row.get(k) for k in ("processes", "process_nodes", "global_batch_size", "peak_host_memory_mib")},
                **{name: _get(row, keys) for name, keys in THROUGHPUT.items()},
                "source": row["source"],
            }
        )
    for row in doc["inference"]:
        line = {
            "table": "inference",
            **{k: row.get(k) for k in IDENTITY},
            "accuracy_metric": row["accuracy_metric"],
            "accuracy": row["accuracy"],
            "source": row["source"],
        }
        for name, scenario, metric, keys in scenarios:
            entry = row["scenarios"].get(scenario)
            line[name] = _get(entry, keys) if entry and entry["metric"] == metric else None
        lines.append(line)
    for row in (doc.get("mlcommons_training") or {"rows": []})["rows"]:
        lines.append(
            {
                "table": "mlcommons-training",
                "rules_version": row["ruleset"],
                "task": row["benchmark"],
                "org": row["submitter"],
                **{k: row.get(k) for k in ("id", "division", "system", "system_name", "system_status")},
                "runs": row["runs"],
                "failed_runs": row["failed_runs"],
                **{k: row[k] for k in MLCOMMONS},
                "source": row["source"],
            }
        )
    for row in (doc.get("mlcommons_inference") or {"rows": []})["rows"]:
        lines.append(
            {
                "table": "mlcommons-inference",
                "rules_version": row.get("round"),
                "task": row["model"],
                "org": row["submitter"],
                **{k: row[k] for k in ("id", "division", "system", "accuracy_metric", "accuracy", "source")},
                **{k: row[k] for k in MLCOMMONS_INFERENCE},
            }
        )
    for tree in doc["excluded"]:
        lines.append(
            {
                "table": "excluded",
                "rules_version": tree["rules_version"],
                "source": tree["path"],
                "finding_codes": " ".join(f"{code}:{n}" for code, n in tree["codes"].items()),
            }
        )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for line in lines:
        writer.writerow({k: cell(line.get(k)) for k in header} | {"profile": doc["profile"]})  # on every line
    return buffer.getvalue()
