"""The leaderboard's MLCommons sections: clean MLCommons trees' results, as MLCommons publishes them.

    section = mlcommons_training(collected.mlcommons)     # the document's "mlcommons_training"
    for title, rows in benchmark_tables(doc):             # the human views: one table per ruleset and benchmark
        [column.text(row) for column in COLUMNS]
    section = mlcommons_inference(collected.mlcommons_inference)
    for title, rows in scenario_tables(doc):              # one table per model and scenario
        [column.text(row) for column in INFERENCE_COLUMNS]

Training: a row is one (submitter, system, benchmark) of a tree that
`levelfield check` passed, with the score the checker computed exactly as
mlperf_logging's result summarizer does (minutes; docs/mlcommons.md). Rows of
one benchmark are ranked by score, fastest first; a benchmark whose score
could not be computed shows a dash and sorts last.

Inference: a row is one (division, submitter, system, model, scenario) with
the figure the round's MLCommons submission checker reads from its LoadGen
detail log (docs/mlcommons.md: samples/s, tokens/s, or an early-stopping
latency in ms) and its accuracy as that checker judges it; a result with
errors of its own is left out (collect lists it). Rows of one model and
scenario are ranked best first (highest throughput, lowest latency).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

from levelfield.tools.leaderboard.columns import DASH, Column, number

ROW_ID_FIELDS = ("ruleset", "submitter", "system", "benchmark")
INFERENCE_ID_FIELDS = ("division", "submitter", "system", "model", "scenario")


def row_id(row: dict, prefix: str = "mlt", fields: tuple = ROW_ID_FIELDS) -> str:
    """A stable id (`mlt-` or `mli-` + 10 hex digits) over the fields that name the result."""
    key = "/".join(str(row[k]) for k in fields)
    return f"{prefix}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:10]}"


def mlcommons_training(trees: list) -> dict:
    """{"trees": [...], "rows": [...]} from the clean MLCommons Training trees (collect.MlcTree)."""
    rows = []
    for tree in trees:
        ruleset = tree.report.rules_version
        for score in tree.report.scores:
            row = {
                "ruleset": ruleset,
                "source": tree.path,
                "submitter": score["submitter"],
                "system": score["system"],
                "system_name": score.get("system_name"),
                "system_status": score.get("status"),
                "division": score.get("division"),
                "benchmark": score["benchmark"],
                "runs": score["runs"],
                "failed_runs": score["failed_runs"],
                "scaling_factor": score["scaling_factor"],
                "rcp": None if score["rcp"] is None else score["rcp"]["message"],
                "rcp_passed": None if score["rcp"] is None else score["rcp"]["passed"],
                "score_min": score["score_min"],
            }
            rows.append({"id": row_id(row), **row})
    rows.sort(key=lambda r: (r["ruleset"], r["benchmark"], r["score_min"] is None, r["score_min"] or 0, r["id"]))
    return {"trees": _trees(trees), "rows": rows}


def _trees(trees: list) -> list[dict]:
    """The section's "trees": each clean tree, its ruleset, its submitters and its warnings."""
    return [
        {
            "path": tree.path,
            "ruleset": tree.report.rules_version,
            "submitters": sorted({s["submitter"] for s in tree.report.scores}),
            "warnings": tree.warnings,
        }
        for tree in trees
    ]


def _text(key: str):
    return lambda row: DASH if row.get(key) is None else str(row[key])


COLUMNS = [
    Column("id", "id", _text("id")),
    Column("submitter", "submitter", _text("submitter")),
    Column("system", "system", lambda r: r["system_name"] or r["system"]),
    Column("status", "status", _text("system_status")),
    Column("division", "division", _text("division")),
    Column(
        "runs", "runs", lambda r: f"{r['runs']} ({r['failed_runs']} failed)" if r["failed_runs"] else str(r["runs"])
    ),
    Column("rcp", "RCP check", lambda r: DASH if r["rcp"] is None else r["rcp"]),
    Column("scaling", "RCP scaling", lambda r: f"{r['scaling_factor']:.6g}", numeric=True),
    Column("score", "score min (olympic mean x scaling)", lambda r: number(r["score_min"]), numeric=True),
]


def benchmark_tables(doc: dict) -> list[tuple[str, list[dict]]]:
    """(title, rows) per ruleset and benchmark of the document's MLCommons Training rows, in rank order."""
    section = doc.get("mlcommons_training") or {"rows": []}
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in section["rows"]:
        groups[(row["ruleset"], row["benchmark"])].append(row)
    return [(f"{benchmark} · {ruleset}", groups[(ruleset, benchmark)]) for ruleset, benchmark in sorted(groups)]


def mlcommons_inference(trees: list) -> dict:
    """{"trees": [...], "rows": [...]} from the clean MLCommons Inference trees (collect.MlcTree)."""
    rows = []
    for tree in trees:
        for score in tree.report.scores:
            if score.get("errors"):
                continue  # collect lists it under excluded, with its codes
            accuracy = score.get("accuracy") or {}
            row = {
                "source": tree.path,
                **{k: score.get(k) for k in INFERENCE_ID_FIELDS},
                "round": score.get("round"),
                "benchmark": score.get("benchmark"),
                "metric": score["metric"],
                "value": score["value"],
                "field": score.get("field"),
                "validity": score["validity"],
                "loadgen_version": score["loadgen_version"],
                "accuracy_metric": accuracy.get("name"),
                "accuracy": accuracy.get("value"),
                "accuracy_target": accuracy.get("target"),
                "compliance": " ".join(f"{t}:{v or '?'}" for t, v in sorted((score.get("compliance") or {}).items())),
            }
            rows.append({"id": row_id(row, "mli", INFERENCE_ID_FIELDS), **row})
    rows.sort(key=_inference_rank)
    return {"trees": _trees(trees), "rows": rows}


def _inference_rank(row: dict) -> tuple:
    """Per model and scenario, best first: a latency (`_ms`) ascending, a throughput descending."""
    value = row["value"]
    lower_is_better = str(row["metric"]).endswith("_ms")
    key = (value if lower_is_better else -value) if value is not None else 0.0
    return (row["model"], row["scenario"], value is None, key, row["id"])


def _metric(row: dict) -> str:
    return DASH if row["value"] is None else f"{number(row['value'])} {row['metric']}"


def _accuracy(row: dict) -> str:
    if row["accuracy"] is None:
        return DASH
    target = "" if row.get("accuracy_target") is None else f" (>= {row['accuracy_target']:.6g})"
    return f"{row['accuracy_metric']} {row['accuracy']:g}{target}"


INFERENCE_COLUMNS = [
    Column("id", "id", _text("id")),
    Column("division", "division", _text("division")),
    Column("submitter", "submitter", _text("submitter")),
    Column("system", "system", _text("system")),
    Column("metric", "official figure (the round's checker)", _metric, numeric=True),
    Column("field", "detail log key", _text("field")),
    Column("validity", "LoadGen", _text("validity")),
    Column("accuracy", "accuracy (target)", _accuracy),
    Column("compliance", "compliance tests", lambda r: r["compliance"] or DASH),
    Column("loadgen", "LoadGen version", _text("loadgen_version")),
]


def scenario_tables(doc: dict) -> list[tuple[str, list[dict]]]:
    """(title, rows) per model and scenario of the document's MLCommons Inference rows, in rank order."""
    section = doc.get("mlcommons_inference") or {"rows": []}
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in section["rows"]:
        groups[(row["model"], row["scenario"])].append(row)
    return [
        (f"{model} · {scenario} · MLCommons inference", groups[(model, scenario)]) for model, scenario in sorted(groups)
    ]
