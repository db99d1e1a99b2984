"""MLCommons Training trees: read the published corpus, score it as mlperf_logging's result summarizer does.

The corpus (../shared/mlperf-corpus, see its README) is published MLCommons data: read from there, never
copied into the project; the peer runs on temporary copies, since it writes scaling.json into what it reads.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from levelfield.checker.mlcommons.layout import INFERENCE, LEVELFIELD, TRAINING, detect_layout
from levelfield.checker.mlcommons.training import check_training_tree, olympic_average
from tests.conftest import REPO, assert_user_error, run_cli
from tests.test_checker_fixtures import EXAMPLE

CORPUS = REPO.parent / "shared" / "mlperf-corpus"
TRAINING_V4 = CORPUS / "training_results_v4.0"
RULESET = "4.0.0"
needs_corpus = pytest.mark.skipif(not TRAINING_V4.is_dir(), reason=f"{CORPUS} (the published MLPerf corpus) is absent")
SUBMITTERS = sorted(p.name for p in TRAINING_V4.iterdir()) if TRAINING_V4.is_dir() else []


def _copy(submitter: str, tmp_path: Path) -> Path:
    target = tmp_path / "training_results_v4.0" / submitter
    shutil.copytree(TRAINING_V4 / submitter, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    return target


# The summarizer CSV's numeric columns that are not a benchmark's score.
NOT_SCORES = {"number_of_nodes", "host_processors_count", "accelerators_count"}


def _peer_scores(folder: Path, tmp_path: Path) -> dict[tuple[str, str], float]:
    """{(system_desc file stem, benchmark): score} from `python -m mlperf_logging.result_summarizer`'s CSV."""
    out = tmp_path / "peer.csv"
    subprocess.run(
        [sys.executable, "-m", "mlperf_logging.result_summarizer", str(folder), "training", RULESET, "--csv", str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    scores = {}
    with out.open() as f:
        for row in csv.DictReader(f):
            system = row["details_url"].rsplit("/", 1)[-1].removesuffix(".json")
            for benchmark, value in row.items():
                if benchmark not in NOT_SCORES and value and _number(value):
                    scores[(system, benchmark)] = float(value)
    return scores


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@needs_corpus
@pytest.mark.parametrize("submitter", SUBMITTERS)
def test_scores_equal_the_result_summarizers(submitter, tmp_path):
    folder = _copy(submitter, tmp_path)
    peer = _peer_scores(folder, tmp_path)
    ours = {(s["system"], s["benchmark"]): s["score_min"] for s in check_training_tree(folder, RULESET).scores}
    assert peer and set(peer) == set(ours)
    for key, value in peer.items():
        assert ours[key] == pytest.approx(value, rel=1e-9), key


@needs_corpus
def test_the_corpus_reads_with_the_runs_and_lines_mlcommons_drops():
    report = check_training_tree(TRAINING_V4)
    dell = [f for f in report.findings if f.path.startswith("Dell/")]
    assert {(f.code, f.path.rsplit("/", 1)[-1], f.line) for f in dell} >= {
        ("MLT002", "result_4.txt", 168),  # `[:::MLLOG`: another process's output first, read as the peer reads it
        ("MLT003", "result_4.txt", 411),  # run_stop status aborted
        ("MLT004", "result_4.txt", None),  # the peer's compliance rules reject it: dropped from the score
    }
    (row,) = [s for s in report.scores if s["submitter"] == "Dell"]
    assert row["failed_runs"] == 1 and len(row["run_minutes"]) == 4
    assert not report.failed  # one failed run of five is what the olympic scoring drops
    assert {s["rcp"]["message"] for s in report.scores} == {"RCP found", "RCP Interpolation"}


def test_the_olympic_average_drops_failed_runs_first():
    assert olympic_average([3.0, 1.0, 2.0, 5.0, 4.0], dropped=0, max_dropped=1) == 3.0
    assert olympic_average([3.0, 1.0, 2.0, 4.0], dropped=1, max_dropped=1) == 3.0  # failed run = the slowest
    assert olympic_average([1.0, 2.0], dropped=3, max_dropped=4) is None


def test_layouts_are_told_apart_by_their_folders(tmp_path):
    assert detect_layout(EXAMPLE) == LEVELFIELD
    (tmp_path / "sub" / "results").mkdir(parents=True)
    (tmp_path / "sub" / "systems").mkdir()
    assert detect_layout(tmp_path / "sub") == TRAINING and detect_layout(tmp_path) == TRAINING
    (tmp_path / "inf" / "closed" / "Acme" / "results").mkdir(parents=True)
    assert detect_layout(tmp_path / "inf") == INFERENCE
    (tmp_path / "empty").mkdir()
    assert_user_error(run_cli("check", str(tmp_path / "empty")), "not a submission tree of a layout levelfield reads")


# --- hand-planted defects on a copy of one submitter folder ----------------------------------------------


def _edit_log(path: Path, key: str, change) -> None:
    lines = path.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if f'"key": "{key}"' in line and line.startswith(":::MLLOG "):
            entry = json.loads(line[len(":::MLLOG ") :])
            lines[i] = ":::MLLOG " + json.dumps(change(entry)) + "\n"
    path.write_text("".join(lines))


def _dell(tmp_path):
    folder = _copy("Dell", tmp_path)
    return folder, folder / "results" / "XE9680x8H100-SXM-80GB" / "resnet"


def _codes(folder) -> set[str]:
    return {f.code for f in check_training_tree(folder, RULESET).active}


@needs_corpus
def test_each_planted_defect_gets_its_code(tmp_path):
    folder, results = _dell(tmp_path)
    clean = _codes(folder)
    assert clean == {"MLT002", "MLT003", "MLT004"}  # the published folder, as it is
    with (results / "result_0.txt").open("a") as f:
        f.write(':::MLLOG {"key": "run_st\n')  # a line cut short
    assert "MLT001" in _codes(folder)  # ... which also fails the peer's compliance: a second failed run
    assert "MLT006" in _codes(folder)
    shutil.copyfile(TRAINING_V4 / "Dell/results/XE9680x8H100-SXM-80GB/resnet/result_0.txt", results / "result_0.txt")
    (results / "scaling.json").write_text('{"scaling_factor": 0.9}')
    assert _codes(folder) == clean | {"MLT008"}
    for log in results.glob("result_*.txt"):
        _edit_log(log, "global_batch_size", lambda e: {**e, "value": 10**7})  # no RCP that large
    assert "MLT005" in _codes(folder)


@needs_corpus
def test_system_descriptions_missing_or_rejected(tmp_path):
    folder, _ = _dell(tmp_path)
    desc = folder / "systems" / "XE9680x8H100-SXM-80GB.json"
    data = json.loads(desc.read_text())
    del data["host_storage_type"]
    desc.write_text(json.dumps(data))
    assert "MLT009" in _codes(folder)
    desc.unlink()
    report = run_cli("check", str(folder), "--no-hints")
    assert report.returncode == 1 and "MLT007" in report.stdout


@needs_corpus
def test_check_prints_the_scores_and_a_ruleset_it_cannot_find_is_an_error(tmp_path):
    result = run_cli("check", str(TRAINING_V4 / "NVIDIA"), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["layout"] == TRAINING and {s["benchmark"] for s in doc["scores"]} == {"resnet", "llama2_70b_lora"}
    elsewhere = tmp_path / "somewhere"
    shutil.copytree(TRAINING_V4 / "Google", elsewhere)
    assert_user_error(run_cli("check", str(elsewhere)), "the MLCommons ruleset is not named", "--mlcommons-ruleset")
    assert_user_error(run_cli("check", str(elsewhere), "--mlcommons-ruleset", "9.9.9"), "not one mlperf_logging knows")


@needs_corpus
def test_the_leaderboard_ranks_the_corpus_in_all_four_formats(tmp_path):
    import jsonschema

    docs = {}
    for fmt in ("md", "csv", "json", "html"):
        result = run_cli("leaderboard", str(TRAINING_V4), "--format", fmt)
        assert result.returncode == 0, result.stderr
        docs[fmt] = result.stdout
    doc = json.loads(docs["json"])
    jsonschema.validate(doc, json.loads((REPO / "rules" / "schemas" / "leaderboard.schema.json").read_text()))
    rows = doc["mlcommons_training"]["rows"]
    scores = {(s["system"], s["benchmark"]): s["score_min"] for s in check_training_tree(TRAINING_V4).scores}
    assert {(r["system"], r["benchmark"]): r["score_min"] for r in rows} == scores
    resnet = [r["submitter"] for r in rows if r["benchmark"] == "resnet"]
    assert resnet == ["Dell", "NVIDIA"]  # 13.22 min before 13.33 min
    assert all(r["id"] in docs["md"] and r["id"] in docs["html"] for r in rows)
    assert sum(line.startswith("mlcommons-training,") for line in docs["csv"].splitlines()) == len(rows)


@needs_corpus
def test_a_tree_with_too_many_failed_runs_is_left_out(tmp_path):
    folder, results = _dell(tmp_path)
    _edit_log(results / "result_0.txt", "eval_accuracy", lambda e: {**e, "value": 0.5})  # never converged
    result = run_cli("leaderboard", str(folder), "--format", "json")
    doc = json.loads(result.stdout)
    assert result.returncode == 0 and "mlcommons_training" not in doc
    assert doc["excluded"][0]["codes"]["MLT006"] == 1 and "left out" in result.stderr


@needs_corpus
def test_damaged_copies_of_a_published_folder_never_crash_the_reader(tmp_path):
    # Found and fixed this way: an 8 MiB MLLOG line hung mlperf_logging's parser (its line regex is
    # quadratic); such logs are no longer handed to it (MLT001).
    out = tmp_path / "fuzz.json"
    args = ("--mlcommons-training", str(TRAINING_V4 / "Dell"), "--inputs", "24", "--seed", "3", "--out", str(out))
    result = subprocess.run([sys.executable, "-m", "levelfield.tools.fuzz", *args], capture_output=True, text=True)
    report = json.loads(out.read_text())
    assert result.returncode == 0 and report["crashes"] == 0, report["examples"]
    assert report["inputs"] == 24 and "MLT001" in report["codes"]


@needs_corpus
def test_a_log_too_costly_for_the_peer_parser_is_not_handed_to_it(tmp_path):
    folder, results = _dell(tmp_path)
    with (results / "result_0.txt").open("a") as f:
        f.write(':::MLLOG {"key": "x", "value": "' + "y" * 50_000 + '"}\n')  # ~2.5e9 squared characters
    report = check_training_tree(folder, RULESET)
    (too_long,) = [f for f in report.findings if "bounded time" in f.message]
    assert too_long.code == "MLT001" and too_long.path.endswith("result_0.txt")
