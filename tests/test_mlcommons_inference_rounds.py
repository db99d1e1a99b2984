"""MLCommons Inference trees scored as each round's own submission checker scores them (MLI010-MLI012).

The development corpus (../shared/mlperf-corpus, round v4.1, ResNet-50) is the acceptance case: every result's
figure is the detail-log key the v4.1 checker reads, value for value. What the corpus lacks (LLM benchmarks,
tokens per second, the Interactive scenario, v5.x) is built from the corpus's own files, edited into the shapes
of real v5.1 logs (a LoadGen 5.1.0 version string, the token keys, the AMD sample's accuracy.txt).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from levelfield.checker.mlcommons.inference import check_inference_tree, unowned_errors
from levelfield.ground.errors import UserError
from tests.conftest import REPO, run_cli

CORPUS = REPO.parent / "shared" / "mlperf-corpus"
INFERENCE_V41 = CORPUS / "inference_results_v4.1"
needs_corpus = pytest.mark.skipif(
    not INFERENCE_V41.is_dir(), reason=f"{CORPUS} (the published MLPerf corpus) is absent"
)
LENOVO, NVIDIA = INFERENCE_V41 / "closed" / "Lenovo", INFERENCE_V41 / "closed" / "NVIDIA"
LENOVO_SYSTEM, NVIDIA_SYSTEM = "Lenovo_2xL4_TRT", "H200-SXM-141GBx8_TRT"
# What MLCommons' v4.1 checker reads (RESULT_FIELD_NEW["v4.1"]), written here independently of the rules file.
V41_FIELD = {
    "Offline": "result_samples_per_second",
    "SingleStream": "early_stopping_latency_ss",
    "MultiStream": "early_stopping_latency_ms",
    "Server": "result_completed_samples_per_sec",
}
LLAMA2_ACCURACY = (
    "\nResults\n\n{'rouge1': 44.4542, 'rouge2': 22.0419, 'rougeL': 28.6112, 'rougeLsum': 42.0341, 'gen_len': 29579723, "
    "'gen_num': 24576, 'gen_tok_len': 7399913, 'tokens_per_sample': 301.1}\n\nhash=" + "8f" * 32 + "\n"
)
EDGE_ACCURACY = LLAMA2_ACCURACY.replace("44.4542", "39.2").replace("22.0419", "16.2").replace("28.6112", "24.7")
EDGE_ACCURACY = EDGE_ACCURACY.replace("42.0341", "36.2").replace("29579723", "3000000")
COMPLETED_TOKENS = "result_completed_tokens_per_second"


def _detail_values(path: Path) -> dict:
    """The detail log's {key: last value}, parsed here without the checker's reader."""
    values = {}
    for line in path.read_text().splitlines():
        if line.startswith(":::MLLOG "):
            entry = json.loads(line[len(":::MLLOG ") :])
            values[entry["key"]] = entry["value"]
    return values


def _writable(folder: Path) -> Path:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    return folder


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return _writable(target)


def _edit_log(path: Path, edits: dict, add_after: tuple[str, dict] | None = None) -> None:
    """Set keys' values on their MLLOG lines; add new keys' lines (the shape of the line of `add_after[0]`)."""
    lines = path.read_text().split("\n")
    for i, line in enumerate(list(lines)):
        if not line.startswith(":::MLLOG "):
            continue
        entry = json.loads(line[len(":::MLLOG ") :])
        if entry["key"] in edits:
            lines[i] = ":::MLLOG " + json.dumps({**entry, "value": edits[entry["key"]]})
        if add_after and entry["key"] == add_after[0]:
            added = [":::MLLOG " + json.dumps({**entry, "key": k, "value": v}) for k, v in add_after[1].items()]
            lines[i + 1 : i + 1] = added
    path.write_text("\n".join(lines))


def _scenario(run_from: Path, target: Path, *, version: str, tokens: dict, accuracy: str) -> None:
    """One result folder: the corpus result `run_from`'s files, its logs by LoadGen `version` with `tokens` added."""
    _copy(run_from, target)
    for log in target.rglob("mlperf_log_detail.txt"):
        performance = "performance" in log.parts
        _edit_log(log, {"loadgen_version": version}, ("result_validity", tokens) if performance else None)
    (target / "accuracy" / "accuracy.txt").write_text(accuracy)


def _llm_tree(root: Path, submitter: str, tokens_per_s: float) -> Path:
    """A v5.1 submitter folder: llama2-70b-99 Offline, Server and Interactive, llama3.1-8b-edge SingleStream and
    resnet50 SingleStream, from the corpus's NVIDIA and Lenovo results."""
    folder = root / "closed" / submitter
    results = folder / "results" / "box"
    version = "5.1.0 @ 091d51f041"
    nv = NVIDIA / "results" / NVIDIA_SYSTEM / "resnet50"
    lenovo = LENOVO / "results" / LENOVO_SYSTEM / "resnet50"
    resnet_accuracy = (lenovo / "SingleStream" / "accuracy" / "accuracy.txt").read_text()
    built = [  # (benchmark, scenario folder, the corpus run it is made from, tokens added, accuracy.txt)
        ("llama2-70b-99", "Offline", nv / "Offline", {"result_tokens_per_second": tokens_per_s}, LLAMA2_ACCURACY),
        ("llama2-70b-99", "Server", nv / "Server", {COMPLETED_TOKENS: tokens_per_s / 2}, LLAMA2_ACCURACY),
        # An Interactive folder holds a LoadGen Server run (effective_scenario Server), as the v5.1 samples do.
        ("llama2-70b-99", "Interactive", nv / "Server", {COMPLETED_TOKENS: tokens_per_s / 4}, LLAMA2_ACCURACY),
        ("llama3.1-8b-edge", "SingleStream", lenovo / "SingleStream", {}, EDGE_ACCURACY),
        ("resnet50", "SingleStream", lenovo / "SingleStream", {}, resnet_accuracy),
    ]
    for benchmark, scenario, source, tokens, accuracy in built:
        _scenario(source, results / benchmark / scenario, version=version, tokens=tokens, accuracy=accuracy)
    (folder / "systems").mkdir()
    shutil.copy(LENOVO / "systems" / f"{LENOVO_SYSTEM}.json", folder / "systems" / "box.json")
    return folder


def _rows(report) -> dict:
    return {(r["submitter"], r["model"], r["scenario"]): r for r in report.scores}


# --- the acceptance case: the development corpus, round v4.1 ---------------------------------------------------


@needs_corpus
def test_every_corpus_result_scores_to_the_field_the_v41_checker_reads():
    report = check_inference_tree(INFERENCE_V41)
    assert report.rules_version == "MLPerf Inference v4.1 (round from the path's folder inference_results_v4.1)"
    assert len(report.scores) == 5
    for row in report.scores:
        folder = INFERENCE_V41 / row["division"] / row["submitter"] / "results" / row["system"] / row["model"]
        values = _detail_values(folder / row["scenario"] / "performance" / "run_1" / "mlperf_log_detail.txt")
        field = V41_FIELD[row["scenario"]]
        latency = row["scenario"] in ("SingleStream", "MultiStream")
        expected = float(values[field]) / 1_000_000 if latency else float(values[field])
        assert (row["round"], row["benchmark"], row["field"], row["value"]) == ("v4.1", "resnet", field, expected)
        assert row["metric"] == ("latency_ms" if latency else "samples_per_s")
    figures = {(r["submitter"], r["scenario"]): r["value"] for r in report.scores}
    assert figures == {
        ("Lenovo", "SingleStream"): 0.386829,  # early stopping; the summary's p90 is 386822 ns
        ("Lenovo", "MultiStream"): 0.750563,  # early stopping; the summary's p99 per query is 750521 ns
        ("Lenovo", "Offline"): 25600.0,
        ("NVIDIA", "Offline"): 756960.0,
        ("NVIDIA", "Server"): 632229.0,  # completed samples/s from v4.1 on (scheduled: 632241)
    }


@needs_corpus
def test_every_corpus_result_meets_resnets_accuracy_target():
    for row in check_inference_tree(INFERENCE_V41).scores:
        assert row["accuracy_judged"] == [
            {"metric": "acc", "kind": "minimum", "value": row["accuracy"]["value"], "bound": 76.46 * 0.99, "met": True}
        ]


@needs_corpus
def test_the_option_names_the_round_and_v40_reads_scheduled_samples():
    report = check_inference_tree(NVIDIA, ruleset="4.0")
    assert report.rules_version == "MLPerf Inference v4.0 (round from --mlcommons-ruleset 4.0)"
    assert _rows(report)[("NVIDIA", "resnet50", "Server")]["value"] == 632241.0  # result_scheduled_samples_per_sec
    with pytest.raises(UserError, match="v4.0, v4.1"):
        check_inference_tree(NVIDIA, ruleset="4.2")
    result = run_cli("check", str(NVIDIA), "--mlcommons-ruleset", "3.9")
    assert result.returncode == 2 and "not an MLPerf Inference round levelfield holds" in result.stderr


@needs_corpus
def test_without_option_or_path_the_newest_loadgen_version_tells_the_round(tmp_path):
    report = check_inference_tree(_copy(NVIDIA, tmp_path / "closed" / "NVIDIA"))
    assert report.rules_version.startswith("MLPerf Inference v4.1 (round from the newest LoadGen version")
    assert "4.0 @ 4a77003610" in report.rules_version and "4.1 @ c83565d85d" in report.rules_version


# --- MLI010: accuracy below the round's target ----------------------------------------------------------------


@needs_corpus
def test_mli010_an_accuracy_below_the_target_fails_and_the_corpus_passes(tmp_path):
    folder = _copy(LENOVO, tmp_path / "inference_results_v4.1" / "closed" / "Lenovo")
    assert not check_inference_tree(folder).active
    txt = folder / "results" / LENOVO_SYSTEM / "resnet50" / "Offline" / "accuracy" / "accuracy.txt"
    txt.write_text(txt.read_text().replace("accuracy=76.078%", "accuracy=75.650%"))
    (below,) = check_inference_tree(folder).active
    assert (below.code, below.path.endswith("Offline/accuracy/accuracy.txt"), below.line) == ("MLI010", True, 1)
    assert below.found == "75.65" and below.expected.startswith(">= 75.6954 (76.46 x 0.99")
    txt.write_text("hash=" + "0" * 64 + "\n")
    (missing,) = [f for f in check_inference_tree(folder).active if f.code == "MLI010"]
    assert "no line states acc" in missing.message and missing.found is None


# --- MLI011: a benchmark or scenario the round does not know; the rest of the tree is still scored ------------


@needs_corpus
def test_mli011_unknown_benchmark_and_scenario_name_what_the_round_allows(tmp_path):
    folder = _copy(LENOVO, tmp_path / "inference_results_v4.1" / "closed" / "Lenovo")
    results = folder / "results" / LENOVO_SYSTEM
    shutil.copytree(results / "resnet50", results / "resnet-tuned")
    (results / "resnet50" / "MultiStream").rename(results / "resnet50" / "Interactive")
    report = check_inference_tree(folder)
    unknown = {(f.path.split("/")[-2:][0], f.path.rsplit("/", 1)[-1]): f for f in report.active}
    assert {f.code for f in report.active} == {"MLI011"}
    benchmark = unknown[(LENOVO_SYSTEM, "resnet-tuned")]
    assert benchmark.found == "resnet-tuned" and "benchmarks: resnet, retinanet," in benchmark.message
    assert "mixtral-8x7b; its model_mapping: ssd-resnet34 -> retinanet" in benchmark.message
    scenario = unknown[("resnet50", "Interactive")]
    assert json.loads(scenario.expected) == ["SingleStream", "MultiStream", "Server", "Offline"]
    rows = _rows(report)
    assert rows[("Lenovo", "resnet50", "SingleStream")]["value"] == 0.386829  # the rest of the tree is scored
    assert rows[("Lenovo", "resnet-tuned", "Offline")]["value"] is None
    assert rows[("Lenovo", "resnet-tuned", "Offline")]["errors"] == {"MLI011": 1}
    assert not unowned_errors(report)  # every error belongs to a result: the leaderboard keeps the others


@needs_corpus
def test_mli011_a_folder_whose_run_is_another_scenario(tmp_path):
    folder = _copy(LENOVO, tmp_path / "inference_results_v4.1" / "closed" / "Lenovo")
    detail = folder / "results" / LENOVO_SYSTEM / "resnet50" / "Offline" / "performance" / "run_1"
    _edit_log(detail / "mlperf_log_detail.txt", {"effective_scenario": "SingleStream"})
    codes = {f.code for f in check_inference_tree(folder).active}
    assert "MLI011" in codes


@needs_corpus
def test_mli012_a_round_levelfield_holds_no_rules_for(tmp_path):
    folder = _copy(LENOVO, tmp_path / "inference_results_v3.1" / "closed" / "Lenovo")
    report = check_inference_tree(folder)
    (round_finding,) = report.active
    assert (round_finding.code, round_finding.path, round_finding.found) == ("MLI012", ".", "v3.1")
    assert json.loads(round_finding.expected) == ["v4.0", "v4.1", "v5.0", "v5.1", "v6.0"]
    assert all(row["value"] is None for row in report.scores) and unowned_errors(report) == [round_finding]


# --- what the corpus lacks: LLM benchmarks in tokens/s, Interactive, round v5.1 ---------------------------------


@needs_corpus
def test_a_v51_tree_with_llms_and_interactive_is_scored_in_tokens_per_second(tmp_path):
    folder = _llm_tree(tmp_path / "inference_results_v5.1", "Acme", 9000.0)
    report = check_inference_tree(folder)
    assert report.rules_version.startswith("MLPerf Inference v5.1") and not report.failed, report.active
    rows = _rows(report)
    figures = {(m, s): (r["metric"], r["field"], r["value"]) for (_, m, s), r in rows.items()}
    assert figures == {
        ("llama2-70b-99", "Offline"): ("tokens_per_s", "result_tokens_per_second", 9000.0),
        ("llama2-70b-99", "Server"): ("tokens_per_s", "result_completed_tokens_per_second", 4500.0),
        ("llama2-70b-99", "Interactive"): ("tokens_per_s", "result_completed_tokens_per_second", 2250.0),
        # v5.1's override for the edge LLM: the plain p90 (386822 ns), not the early-stopping estimate
        ("llama3.1-8b-edge", "SingleStream"): ("latency_ms", "result_90.00_percentile_latency_ns", 0.386822),
        ("resnet50", "SingleStream"): ("latency_ms", "early_stopping_latency_ss", 0.386829),
    }
    judged = rows[("Acme", "llama2-70b-99", "Interactive")]["accuracy_judged"]
    assert [(j["metric"], j["kind"], j["met"]) for j in judged] == [
        ("ROUGE1", "minimum", True),
        ("ROUGE2", "minimum", True),
        ("ROUGEL", "minimum", True),
        ("TOKENS_PER_SAMPLE", "minimum", True),
        ("TOKENS_PER_SAMPLE", "maximum", True),
    ]


@needs_corpus
def test_the_same_tree_judged_as_v41_names_interactive_unknown(tmp_path):
    folder = _llm_tree(tmp_path / "trees", "Acme", 9000.0)
    report = check_inference_tree(folder, ruleset="v4.1")
    unknown = [f for f in report.active if f.code == "MLI011"]
    assert sorted(f.path.rsplit("/", 1)[-1] for f in unknown) == ["Interactive", "llama3.1-8b-edge"]
    assert _rows(report)[("Acme", "llama2-70b-99", "Offline")]["value"] == 9000.0  # v4.1 reads tokens too


@needs_corpus
def test_the_leaderboard_ranks_llms_by_tokens_per_second_with_an_interactive_table(tmp_path):
    import jsonschema

    root = tmp_path / "inference_results_v5.1"
    _llm_tree(root, "Acme", 9000.0)
    _llm_tree(root, "Zeta", 12000.0)
    result = run_cli("leaderboard", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, json.loads((REPO / "rules" / "schemas" / "leaderboard.schema.json").read_text()))
    rows = doc["mlcommons_inference"]["rows"]
    interactive = [r for r in rows if r["scenario"] == "Interactive"]
    assert [(r["submitter"], r["metric"], r["value"]) for r in interactive] == [
        ("Zeta", "tokens_per_s", 3000.0),
        ("Acme", "tokens_per_s", 2250.0),
    ]
    assert {r["round"] for r in rows} == {"v5.1"} and not doc["excluded"]
    markdown = run_cli("leaderboard", str(root), "--format", "md").stdout
    assert "llama2-70b-99 · Interactive · MLCommons inference" in markdown and "12,000 tokens_per_s" in markdown


@needs_corpus
def test_the_leaderboard_leaves_out_a_result_with_errors_and_ranks_the_rest(tmp_path):
    root = tmp_path / "inference_results_v5.1"
    _llm_tree(root, "Acme", 9000.0)
    zeta = _llm_tree(root, "Zeta", 12000.0)
    txt = zeta / "results" / "box" / "llama2-70b-99" / "Offline" / "accuracy" / "accuracy.txt"
    txt.write_text(LLAMA2_ACCURACY.replace("44.4542", "40.0"))  # ROUGE1 below 44.4312 x 0.99
    doc = json.loads(run_cli("leaderboard", str(root), "--format", "json").stdout)
    rows = doc["mlcommons_inference"]["rows"]
    assert [r["submitter"] for r in rows if (r["model"], r["scenario"]) == ("llama2-70b-99", "Offline")] == ["Acme"]
    (excluded,) = doc["excluded"]
    assert excluded["path"].endswith("closed/Zeta/results/box/llama2-70b-99/Offline")
    assert excluded["codes"] == {"MLI010": 1} and excluded["rules_version"].startswith("MLPerf Inference v5.1")
    assert len(rows) == 9  # 10 results, 1 left out
