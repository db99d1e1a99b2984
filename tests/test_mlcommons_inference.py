"""MLCommons Inference trees: read the published corpus, every result's metric as its summary states it.

The corpus (../shared/mlperf-corpus, see its README) is published MLCommons data: read from there, never
copied into the project; the planted defects are edits of a temporary copy of one submitter folder.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from levelfield.checker.mlcommons.inference import check_inference_tree
from levelfield.checker.mlcommons.loadgen_files import accuracy_log_state, parse_summary
from levelfield.ground.metrics import NS_PER_MS
from tests.conftest import REPO, run_cli

CORPUS = REPO.parent / "shared" / "mlperf-corpus"
INFERENCE_V41 = CORPUS / "inference_results_v4.1"
needs_corpus = pytest.mark.skipif(
    not INFERENCE_V41.is_dir(), reason=f"{CORPUS} (the published MLPerf corpus) is absent"
)
LENOVO_SYSTEM, NVIDIA_SYSTEM = "Lenovo_2xL4_TRT", "H200-SXM-141GBx8_TRT"
# The summary's metric line, matched here independently of the checker's reader (both LoadGen wordings).
SUMMARY_METRIC = re.compile(
    r"^(?:Completed )?(?:[Ss]amples per second|\d+(?:\.\d+)?th percentile latency \(ns\))\s*:\s*(\S+)", re.M
)


def _copy(submitter: str, tmp_path: Path) -> Path:
    target = tmp_path / "closed" / submitter
    shutil.copytree(INFERENCE_V41 / "closed" / submitter, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    return target


def _active(folder: Path) -> list:
    return check_inference_tree(folder).active


def _codes(folder: Path) -> set[str]:
    return {f.code for f in _active(folder)}


def _edit_log(path: Path, key: str, value) -> None:
    """Set `key`'s value on its MLLOG line(s) of a LoadGen detail log."""
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        if line.startswith(":::MLLOG ") and f'"key": "{key}"' in line:
            entry = json.loads(line[len(":::MLLOG ") :])
            lines[i] = ":::MLLOG " + json.dumps({**entry, "value": value})
    path.write_text("\n".join(lines))


def _lenovo(tmp_path: Path, scenario: str = "Offline") -> tuple[Path, Path]:
    folder = _copy("Lenovo", tmp_path)
    return folder, folder / "results" / LENOVO_SYSTEM / "resnet50" / scenario


# --- the published corpus ----------------------------------------------------------------------------------


@needs_corpus
def test_the_corpus_reads_without_crashing_one_row_per_result():
    report = check_inference_tree(INFERENCE_V41)
    rows = {(s["submitter"], s["system"], s["model"], s["scenario"]) for s in report.scores}
    assert rows == {
        ("Lenovo", LENOVO_SYSTEM, "resnet50", "SingleStream"),
        ("Lenovo", LENOVO_SYSTEM, "resnet50", "MultiStream"),
        ("Lenovo", LENOVO_SYSTEM, "resnet50", "Offline"),
        ("NVIDIA", NVIDIA_SYSTEM, "resnet50", "Offline"),
        ("NVIDIA", NVIDIA_SYSTEM, "resnet50", "Server"),
    }
    assert report.layout == "mlcommons-inference" and not report.failed
    assert {f.code for f in report.findings} == {"MLI006"}  # the truncated accuracy logs are not findings
    for row in report.scores:
        assert row["division"] == "closed" and row["validity"] == "VALID" and row["errors"] == {}
        assert row["accuracy"]["name"] == "acc" and 75 < row["accuracy"]["value"] < 77
        assert re.fullmatch(r"[0-9a-f]{64}", row["accuracy_hash"])
        assert row["compliance"] == {"TEST01": "PASS", "TEST04": "PASS", "TEST05": "PASS"}


@needs_corpus
def test_every_loadgen_metric_equals_its_summary_files_value():
    """The LoadGen metric levelfield computes from each detail log (as for its own runs) is the value its summary
    prints, to the 6 significant digits LoadGen prints a double with in its detail log. The official figure is
    another (test_mlcommons_inference_rounds.py)."""
    report = check_inference_tree(INFERENCE_V41)
    for row in report.scores:
        folder = INFERENCE_V41 / row["division"] / row["submitter"] / "results" / row["system"] / row["model"]
        text = (folder / row["scenario"] / "performance" / "run_1" / "mlperf_log_summary.txt").read_text()
        printed = float(SUMMARY_METRIC.search(text).group(1))
        latency = row["loadgen_metric"].endswith("_latency_ms")
        native = row["loadgen_value"] * NS_PER_MS if latency else row["loadgen_value"]
        assert f"{native:.6g}" == f"{printed:.6g}", row
        assert (
            row["loadgen_metric"]
            == {
                "SingleStream": "p90_latency_ms",
                "MultiStream": "p99_latency_ms",
                "Server": "samples_per_s",
                "Offline": "samples_per_s",
            }[row["scenario"]]
        )


@needs_corpus
def test_nvidias_mixed_loadgen_versions_are_one_finding_naming_them():
    report = check_inference_tree(INFERENCE_V41)
    (mixed,) = [f for f in report.findings if f.code == "MLI006"]
    assert mixed.path == "closed/NVIDIA" and mixed.severity == "warning"
    assert "4.0 @ 4a77003610" in mixed.message and "4.1 @ c83565d85d" in mixed.message
    assert f"{NVIDIA_SYSTEM}/resnet50/Offline" in mixed.message and f"{NVIDIA_SYSTEM}/resnet50/Server" in mixed.message
    assert "MLI006" not in _codes(INFERENCE_V41 / "closed" / "Lenovo")  # one LoadGen build throughout


@needs_corpus
def test_the_cli_checks_an_inference_tree():
    result = run_cli("check", str(INFERENCE_V41), "--no-hints")
    assert result.returncode == 0, result.stderr
    assert "latency_ms" in result.stdout and "MLI006" in result.stdout and "v4.1" in result.stdout
    data = json.loads(run_cli("check", str(INFERENCE_V41 / "closed" / "Lenovo"), "--format", "json").stdout)
    assert data["layout"] == "mlcommons-inference" and len(data["scores"]) == 3 and data["passed"]


# --- hand-planted defects on a copy of Lenovo's folder: each MLI code fails, the corpus is the passing case ----


@needs_corpus
def test_mli001_unreadable_files_are_findings_with_path_and_line(tmp_path):
    folder, offline = _lenovo(tmp_path)
    detail = offline / "performance" / "run_1" / "mlperf_log_detail.txt"
    lines = detail.read_text().split("\n")
    detail.write_text("\n".join(lines[:10] + [':::MLLOG {"key": "result_valid'] + lines[10:]))
    (offline / "accuracy" / "accuracy.txt").write_text("accuracy=76.078%, good=38039, total=50000\n")  # no hash
    log = offline / "accuracy" / "mlperf_log_accuracy.json"
    log.write_bytes(log.read_bytes()[:-10])  # no longer MLCommons' cut: first and last 4,096 characters
    (offline / "performance" / "notes.txt").symlink_to("/etc/hostname")  # the bounded reader follows no link
    found = {(f.code, f.path.rsplit("/", 2)[-2] + "/" + f.path.rsplit("/", 1)[-1], f.line) for f in _active(folder)}
    assert ("MLI001", "performance/notes.txt", None) in found
    assert ("MLI001", "run_1/mlperf_log_detail.txt", 11) in found
    assert ("MLI001", "accuracy/accuracy.txt", None) in found
    assert ("MLI001", "accuracy/mlperf_log_accuracy.json", None) in found


@needs_corpus
def test_mli001_a_metric_that_is_not_a_finite_number(tmp_path):
    folder, offline = _lenovo(tmp_path)
    _edit_log(offline / "performance" / "run_1" / "mlperf_log_detail.txt", "result_samples_per_second", float("inf"))
    (unreadable,) = _active(folder)
    assert unreadable.code == "MLI001" and "no finite samples_per_s result" in unreadable.message


@needs_corpus
def test_mli002_a_missing_result_file(tmp_path):
    folder, offline = _lenovo(tmp_path)
    assert _codes(folder) == set()
    (offline / "accuracy" / "accuracy.txt").unlink()
    (offline / "performance" / "run_1" / "mlperf_log_summary.txt").unlink()
    missing = {f.path.rsplit("/", 1)[-1] for f in _active(folder) if f.code == "MLI002"}
    assert missing == {"accuracy.txt", "mlperf_log_summary.txt"}


@needs_corpus
def test_mli003_an_invalid_run_with_loadgens_reasons(tmp_path):
    folder, offline = _lenovo(tmp_path)
    run = offline / "performance" / "run_1"
    _edit_log(run / "mlperf_log_detail.txt", "result_validity", "INVALID")
    _edit_log(run / "mlperf_log_detail.txt", "result_min_duration_met", False)
    summary = run / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("Result is : VALID", "Result is : INVALID"))
    (invalid,) = _active(folder)
    assert invalid.code == "MLI003" and "min duration not met" in invalid.message and invalid.line


@needs_corpus
def test_mli004_a_summary_that_disagrees_with_its_detail_log(tmp_path):
    folder, offline = _lenovo(tmp_path)
    summary = offline / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("Samples per second: 25600", "Samples per second: 25700"))
    (disagrees,) = _active(folder)
    assert (disagrees.code, disagrees.line, disagrees.found) == ("MLI004", 7, "25700")
    summary.write_text(summary.read_text().replace("Samples per second: 25700", "Samples per second: 25600.04"))
    assert _codes(folder) == set()  # 25600 is 25600.04 to the 6 significant digits the detail log prints
    summary.write_text(summary.read_text().replace("Result is : VALID", "Result is : INVALID"))
    (validity,) = _active(folder)
    assert (validity.code, validity.found, validity.expected) == ("MLI004", "INVALID", "VALID")
    single = folder / "results" / LENOVO_SYSTEM / "resnet50" / "SingleStream" / "performance" / "run_1"
    text = (single / "mlperf_log_summary.txt").read_text()
    (single / "mlperf_log_summary.txt").write_text(text.replace("90th percentile latency", "99th percentile latency"))
    percentile = [f for f in _active(folder) if "percentile" in f.message]
    assert [(f.code, f.found, f.expected) for f in percentile] == [("MLI004", "0.99", "0.9")]


@needs_corpus
def test_mli005_settings_below_the_rules(tmp_path):
    folder, offline = _lenovo(tmp_path)
    _edit_log(offline / "performance" / "run_1" / "mlperf_log_detail.txt", "effective_min_duration_ms", 60000)
    _edit_log(offline / "performance" / "run_1" / "mlperf_log_detail.txt", "effective_min_sample_count", 1024)
    below = {f.message.split(" ")[0]: f.expected for f in _active(folder) if f.code == "MLI005"}
    assert below == {"effective_min_duration_ms": ">= 600000", "effective_min_sample_count": ">= 24576"}


@needs_corpus
def test_mli006_fails_on_nvidias_tree_and_passes_on_lenovos():
    assert "MLI006" in _codes(INFERENCE_V41 / "closed" / "NVIDIA")
    assert "MLI006" not in _codes(INFERENCE_V41 / "closed" / "Lenovo")


@needs_corpus
def test_mli007_a_failed_compliance_test(tmp_path):
    folder = _copy("Lenovo", tmp_path)
    verify = folder / "compliance" / LENOVO_SYSTEM / "resnet50" / "Offline" / "TEST04" / "verify_performance.txt"
    verify.write_text(verify.read_text().replace("TEST PASS", "TEST FAIL"))
    (failed,) = _active(folder)
    assert (failed.code, failed.path.endswith("TEST04/verify_performance.txt"), failed.line) == ("MLI007", True, 4)
    verify.write_text("Verifying performance.\n")
    assert {f.code for f in _active(folder)} == {"MLI001"}  # neither verdict: unreadable


@needs_corpus
def test_mli008_a_missing_system_description(tmp_path):
    folder = _copy("Lenovo", tmp_path)
    (folder / "systems" / f"{LENOVO_SYSTEM}.json").unlink()
    (missing,) = _active(folder)
    assert (missing.code, missing.path) == ("MLI008", f"systems/{LENOVO_SYSTEM}.json")


@needs_corpus
def test_mli009_an_error_loadgen_logged(tmp_path):
    folder, offline = _lenovo(tmp_path)
    detail = offline / "performance" / "run_1" / "mlperf_log_detail.txt"
    lines = detail.read_text().split("\n")
    (at,) = [i for i, line in enumerate(lines) if '"key": "generic_message", "value": "Starting performance' in line]
    lines[at] = lines[at].replace('"is_error": false', '"is_error": true')
    detail.write_text("\n".join(lines))
    (error,) = _active(folder)
    assert (error.code, error.line) == ("MLI009", at + 1) and "Starting performance mode" in error.message


@needs_corpus
def test_no_file_of_the_corpus_crashes_it_when_cut_short_or_garbled(tmp_path):
    folder = _copy("Lenovo", tmp_path)
    for i, path in enumerate(sorted(p for p in folder.rglob("*") if p.is_file())):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] if i % 2 else b"\xff\xfe" + data[:100])
    report = check_inference_tree(folder)
    assert report.failed and {f.code for f in report.findings} <= {f"MLI{i:03d}" for i in range(1, 13)}


# --- the readers, on hand-written files ----------------------------------------------------------------------


def test_the_summary_reader_takes_both_loadgen_wordings():
    older = (
        "================================================\nMLPerf Results Summary\n"
        "================================================\nScenario : SingleStream\nMode     : PerformanceOnly\n"
        "90.0th percentile latency (ns) : 386822\nResult is : VALID\n  Min duration satisfied : Yes\n"
        "\n1 warning encountered. See detailed log.\n\nNo errors encountered during test.\n"
    )
    summary, problems = parse_summary(older.encode())
    assert problems == [] and summary.metric == 386822 and summary.percentile == 0.9
    assert (summary.warnings, summary.errors, summary.metric_line) == (1, 0, 6)
    newer = older.replace("90.0th", "90th").replace("1 warning encountered", "12 warnings encountered")
    summary, _ = parse_summary(newer.encode())
    assert summary.metric == 386822 and summary.percentile == 0.9 and summary.warnings == 12
    _, problems = parse_summary(b"MLPerf Results Summary\nScenario : Offline\n")
    assert {why for _, why in problems} == {
        "no 'a metric' line in the MLPerf Results Summary section",
        "no 'Result is' line in the MLPerf Results Summary section",
    }


def test_mlcommons_truncation_is_told_from_a_broken_accuracy_log():
    head, tail = b"[\n" + b"x" * 4094, b"y" * 4094 + b"]\n"
    assert accuracy_log_state(head + b"\n\n...\n\n" + tail) == "mlcommons-truncated"
    assert accuracy_log_state(b"[\n]\n") == "json"  # the copy under performance/run_1
    assert accuracy_log_state(head + b"\n\n..\n\n" + tail).startswith("neither JSON nor MLCommons' truncation")
    assert accuracy_log_state(b'{"a": 1}').startswith("a JSON dict")


@needs_corpus
def test_the_leaderboard_ranks_both_corpora_in_all_four_formats():
    import jsonschema

    trees = (str(INFERENCE_V41), str(CORPUS / "training_results_v4.0"))
    docs = {}
    for fmt in ("md", "csv", "json", "html"):
        result = run_cli("leaderboard", *trees, "--format", fmt)
        assert result.returncode == 0, result.stderr
        docs[fmt] = result.stdout
    doc = json.loads(docs["json"])
    jsonschema.validate(doc, json.loads((REPO / "rules" / "schemas" / "leaderboard.schema.json").read_text()))
    rows = doc["mlcommons_inference"]["rows"]
    scores = {(s["submitter"], s["scenario"]): s["value"] for s in check_inference_tree(INFERENCE_V41).scores}
    assert {(r["submitter"], r["scenario"]): r["value"] for r in rows} == scores
    offline = [r["submitter"] for r in rows if r["scenario"] == "Offline"]
    assert offline == ["NVIDIA", "Lenovo"]  # 756,960 samples/s before 25,600
    assert doc["mlcommons_training"]["rows"]  # both kinds of tree on one page
    assert all(r["id"] in docs["md"] and r["id"] in docs["html"] for r in rows)
    assert sum(line.startswith("mlcommons-inference,") for line in docs["csv"].splitlines()) == len(rows)
