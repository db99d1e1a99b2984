"""The leaderboard's MLCommons Training section: clean MLCommons trees' scores, as MLCommons publishes them.

    section = mlcommons_training(collected.mlcommons)     # the document's "mlcommons_training"
    for title, rows in benchmark_tables(doc):             # the human views: one table per ruleset and benchmark
        [column.text(row) for column in COLUMNS]

A row is one (submitter, system, benchmark) of a tree that `levelfield check`
passed, with the score the checker computed exactly as mlperf_logging's result
summarizer does (minutes; docs/mlcommons.md). Rows of one benchmark are ranked
by score, fastest first; a benchmark whose score could not be computed shows
a dash and sorts last.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

from levelfield.tools.leaderboard.columns import DASH, Column, number

ROW_ID_FIELDS = ("ruleset", "submitter", "system", "benchmark")


def row_id(row: dict) -> str:
    """A stable id (`mlt-` + 10 hex digits) over the ruleset, submitter, system and benchmark."""
    key = "/".join(str(row[k]) for k in ROW_ID_FIELDS)
    return f"mlt-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:10]}"


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
    return {
        "trees": [
            {
                "path": tree.path,
                "ruleset": tree.report.rules_version,
                "submitters": sorted({s["submitter"] for s in tree.report.scores}),
                "warnings": tree.warnings,
            }
            for tree in trees
        ],
        "rows": rows,
    }


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
