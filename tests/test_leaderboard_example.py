"""The leaderboard of the real example submission, checked by the real checker.

    .venv/bin/python -m pytest tests/test_leaderboard_example.py -q

NEEDS submissions/example (`make example`; or point LEVELFIELD_EXAMPLE at a
tree): every test here skips, saying so, while it is absent. The example is
ctr-dlrm trained 5 times per framework plus LoadGen Offline in both modes; it
must check clean, so it is the one end-to-end proof that a clean tree reaches
the tables with the numbers its logs hold.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from submission_edit import copy_tree, edit_mllog, first, reseal, set_value

from conftest import EXAMPLE
from levelfield.tools.leaderboard import build, render

pytestmark = pytest.mark.skipif(
    not (EXAMPLE / "MANIFEST").is_file(), reason=f"needs the example submission at {EXAMPLE} (make example)"
)
FRAMEWORKS = {"pytorch", "tensorflow", "jax"}


@pytest.fixture(scope="module")
def doc() -> dict:
    return build([EXAMPLE])


def olympic_from_files(folder: Path, drop: int = 1) -> float:
    """The olympic score recomputed from the raw MLLOG text, independently of the checker's parser."""
    times = []
    for log in sorted(folder.glob("result_*.txt")):
        entries = [
            json.loads(line.split(":::MLLOG ", 1)[1])
            for line in log.read_text().splitlines()
            if line.startswith(":::MLLOG ")
        ]
        start = next(e for e in entries if e["key"] == "run_start")["time_ms"]
        stop = next(e for e in entries if e["key"] == "run_stop")
        ok = stop["metadata"].get("status") == "success"
        times.append((stop["time_ms"] - start) / 1000 if ok else math.inf)
    kept = sorted(times)[drop : len(times) - drop]
    return sum(kept) / len(kept)


def test_example_is_clean_and_every_framework_is_ranked(doc):
    assert doc["excluded"] == []
    assert [s["path"] for s in doc["submissions"]] == [str(EXAMPLE)]
    assert {r["framework"] for r in doc["training"]} == FRAMEWORKS
    for row in doc["training"]:
        t = row["time_to_target_s"]
        assert row["runs"] == 5 and row["failed_runs"] <= 1 and t["n"] == 5 - row["failed_runs"]
        assert t["ci95_low"] <= t["mean"] <= t["ci95_high"]
        assert row["framework_version"] and row["compile_mode"] and row["peak_host_memory_mib"] > 0


def test_every_row_shows_the_processes_its_logs_hold(doc):
    """The example's runs are one process each, on the one node its system declares."""
    assert {(r["processes"], r["process_nodes"], r["nodes"]) for r in doc["training"]} == {(1, 1, 1)}
    assert "| 1 x 1 node " in render(doc, "md")


def results_folder(row: dict) -> Path:
    """The example's folder of a leaderboard row's results: <division>/<org>/results/<system>/<task>/<framework>."""
    return EXAMPLE / row["division"] / row["org"] / "results" / row["system"] / row["task"] / row["framework"]


def test_time_to_target_matches_the_raw_logs(doc):
    for row in doc["training"]:
        folder = results_folder(row) / "training"
        assert row["time_to_target_s"]["olympic_mean"] == pytest.approx(olympic_from_files(folder), rel=1e-12)


def test_frameworks_compared_pairwise_with_one_fastest(doc):
    assert len(doc["comparisons"]) == 3
    assert all(0 <= c["p_value"] <= 1 for c in doc["comparisons"])
    assert sum(bool(r["vs_fastest"] and r["vs_fastest"]["fastest"]) for r in doc["training"]) == 1


def samples_per_s_from_files(folder: Path) -> list[float]:
    """Each repeat's Offline samples/s from the raw detail logs of run_1/ .. run_N/, independently of the checker."""
    values = []
    for index in range(1, len(list(folder.glob("run_*"))) + 1):
        text = (folder / f"run_{index}" / "mlperf_log_detail.txt").read_text()
        entries = [
            json.loads(line.split(":::MLLOG ", 1)[1]) for line in text.splitlines() if line.startswith(":::MLLOG ")
        ]
        values.append(next(e for e in entries if e["key"] == "result_samples_per_second")["value"])
    return values


def test_offline_rows_carry_every_repeat_their_mean_and_accuracy(doc):
    assert {r["framework"] for r in doc["inference"]} == FRAMEWORKS
    for row in doc["inference"]:
        offline = row["scenarios"]["offline"]
        folder = results_folder(row) / "offline" / "performance"
        assert offline["run_values"] == samples_per_s_from_files(folder) and offline["n"] == 3
        assert offline["metric"] == "samples_per_s" and offline["mean"] == pytest.approx(
            sum(offline["run_values"]) / 3, rel=1e-12
        )
        assert offline["ci95_low"] <= offline["mean"] <= offline["ci95_high"]
        assert offline["accuracy"] >= offline["accuracy_threshold"]
    assert "Offline samples/s mean [95% CI]" in render(doc, "md")


def test_offline_frameworks_are_marked_against_the_best_one(doc):
    marks = [row["scenarios"]["offline"]["vs_best"] for row in doc["inference"]]
    best = [m for m in marks if m["best"]]
    assert len(best) == 1
    assert all(0 <= m["p_value"] <= 1 and isinstance(m["within_noise"], bool) for m in marks if not m["best"])


def test_every_format_renders_and_json_follows_its_schema(doc):
    from levelfield.ground.validation import problems

    assert problems(json.loads(render(doc, "json")), "leaderboard") == []
    for fmt in ("md", "csv", "html"):
        assert render(doc, fmt)


def test_rerender_is_byte_identical(doc):
    assert render(build([EXAMPLE]), "json") == render(doc, "json")


def test_a_defective_copy_is_listed_and_the_example_still_ranked(doc, tmp_path):
    bad = copy_tree(EXAMPLE, tmp_path / "bad")
    edit_mllog(first(bad, "training/result_1.txt"), "seed", set_value("seven"))
    reseal(bad)
    both = build([EXAMPLE, bad])
    assert [e["path"] for e in both["excluded"]] == [str(bad)]
    assert "TRN006" in both["excluded"][0]["codes"]
    assert [r["id"] for r in both["training"]] == [r["id"] for r in doc["training"]]
