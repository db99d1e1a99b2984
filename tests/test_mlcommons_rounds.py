"""The per-round rules of MLCommons Inference (rules/mlcommons/inference_vX.Y.yaml) and how rounds.py applies them.

The expected numbers below are written the way MLCommons' submission checker writes them (76.46 * 0.99), so a
threshold levelfield computes from a rules file must equal the checker's own float, bit for bit.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from levelfield.checker.mlcommons import rounds
from levelfield.ground.errors import UserError

ROUNDS = ["v4.0", "v4.1", "v5.0", "v5.1", "v6.0"]
# One line of the v5.1 accuracy.txt of AMD's llama2-70b-99.9 Interactive sample (mlcommons/inference,
# tools/submission/directory_structure_samples/sample_1), in its real shape.
LLAMA2_ACCURACY = (
    "\nResults\n\n{'rouge1': 44.4542, 'rouge2': 22.0419, 'rougeL': 28.6112, 'rougeLsum': 42.0341, 'gen_len': 29579723, "
    "'gen_num': 24576, 'gen_tok_len': 7399913, 'tokens_per_sample': 301.1}\n\nhash=" + "8f" * 32 + "\n"
)


def _bound(name: str, model: str, metric: str, kind: str = "minimum") -> float:
    rnd = rounds.load_round(name)
    (bound,) = [b for b in (rnd.minimum if kind == "minimum" else rnd.maximum)[model] if b.metric == metric]
    return bound.value


def test_every_round_file_loads_and_is_named_as_its_round():
    assert rounds.known_rounds() == ROUNDS
    for name in ROUNDS:
        rnd = rounds.load_round(name)
        assert rnd.name == name and re.fullmatch(r"[0-9a-f]{40}", rnd.checker["commit"])
        assert set(rnd.result_field) == {"Offline", "SingleStream", "MultiStream", "Server"}


@pytest.mark.parametrize(
    ("name", "model", "metric", "kind", "checker_writes"),
    [
        ("v4.1", "resnet", "acc", "minimum", 76.46 * 0.99),
        ("v4.0", "rnnt", "WER", "minimum", (100 - 7.452) * 0.99),
        ("v4.1", "bert-99.9", "F1", "minimum", 90.874 * 0.999),
        ("v4.1", "mixtral-8x7b", "gsm8k_accuracy", "minimum", 73.78 * 0.99),
        ("v5.0", "mixtral-8x7b", "gsm8k_accuracy", "minimum", 73.66 * 0.99),
        ("v5.1", "deepseek-r1", "exact_match", "minimum", 0.99 * 81.3582),
        ("v5.1", "whisper", "ACCURACY", "minimum", (100.0 - 2.0671) * 0.99),
        ("v5.1", "llama3.1-8b-edge", "GEN_LEN", "maximum", 3051113 * 1.1),
        ("v6.0", "yolo-95", "mAP", "minimum", 53.4 * 0.95),
        ("v6.0", "gpt-oss-120b", "TOKENS_PER_SAMPLE", "maximum", 1.1 * 9999),
        ("v6.0", "stable-diffusion-xl", "CLIP_SCORE", "minimum", 31.68631873),
    ],
)
def test_thresholds_are_the_checkers_own_floats(name, model, metric, kind, checker_writes):
    assert _bound(name, model, metric, kind) == checker_writes


def test_each_rounds_result_field_and_its_overrides():
    v40, v41, v51 = (rounds.load_round(n) for n in ("v4.0", "v4.1", "v5.1"))
    assert v40.field_for("resnet", "Server") == "result_scheduled_samples_per_sec"
    assert v41.field_for("resnet", "Server") == "result_completed_samples_per_sec"
    assert v41.field_for("resnet", "SingleStream") == "early_stopping_latency_ss"
    assert v41.field_for("resnet", "MultiStream") == "early_stopping_latency_ms"
    assert v40.field_for("llama2-70b-99", "Server") == "result_completed_samples_per_sec"  # v4.0: samples
    assert v41.field_for("llama2-70b-99", "Server") == "result_completed_tokens_per_second"
    assert v41.field_for("gptj-99", "Offline") == "result_inferred_tokens_per_second"
    assert v51.field_for("llama3.1-8b-edge", "SingleStream") == "result_90.00_percentile_latency_ns"
    assert v51.field_for("whisper", "Offline") == "result_tokens_per_second"
    assert "Interactive" in v51.scenarios and "Interactive" not in v41.scenarios


def test_a_figure_is_the_keys_value_latencies_in_ms():
    v41 = rounds.load_round("v4.1")
    values = {"early_stopping_latency_ss": 386829, "result_90.00_percentile_latency_ns": 386822}
    expected = rounds.Figure("early_stopping_latency_ss", "latency_ms", 0.386829)
    assert v41.figure("resnet", "SingleStream", values) == expected
    tokens = v41.figure("llama2-70b-99", "Offline", {"result_tokens_per_second": 8840.42})
    assert (tokens.metric, tokens.value) == ("tokens_per_s", 8840.42)
    assert v41.figure("resnet", "Offline", {"result_samples_per_second": float("nan")}).value is None
    assert v41.figure("resnet", "Offline", {}).value is None


def test_folder_names_map_to_benchmarks():
    v41, v51 = rounds.load_round("v4.1"), rounds.load_round("v5.1")
    assert v41.benchmark("resnet50") == "resnet" and v41.benchmark("resnet") == "resnet"
    assert v51.benchmark("llama3_1-8b") == "llama3.1-8b"
    assert v41.benchmark("my-resnet") is None
    assert v41.benchmark("my-resnet", {"my-resnet": "resnet"}) == "resnet"  # the submitter's model_mapping.json
    assert v41.benchmark("my-resnet", {"my-resnet": "not-a-model"}) is None


def test_accuracy_is_judged_line_by_line_with_the_checkers_patterns():
    v51 = rounds.load_round("v5.1")
    judged = {(j.metric, j.kind): j for j in v51.judge_accuracy("llama2-70b-99.9", LLAMA2_ACCURACY)}
    assert all(j.met for j in judged.values()) and judged[("ROUGE1", "minimum")].value == 44.4542
    assert judged[("TOKENS_PER_SAMPLE", "maximum")].line == 4
    low = {j.metric: j for j in v51.judge_accuracy("llama2-70b-99.9", LLAMA2_ACCURACY.replace("44.4542", "44.3"))}
    assert not low["ROUGE1"].met and low["ROUGE1"].value == 44.3  # 44.4312 x 0.999 = 44.3868
    long = v51.judge_accuracy("llama2-70b-99", LLAMA2_ACCURACY.replace("301.1", "330.0"))
    assert [(j.metric, j.kind) for j in long if not j.met] == [("TOKENS_PER_SAMPLE", "maximum")]  # 294.45 x 1.1
    missing = {j.metric: j for j in v51.judge_accuracy("llama2-70b-99", "hash=" + "0" * 64)}
    assert missing["ROUGE1"].value is None and not missing["ROUGE1"].met
    assert missing["TOKENS_PER_SAMPLE"].met  # an upper limit no line states is not exceeded, as in the checker
    assert v51.judge_accuracy("resnet", "accuracy=76.078%, good=38039, total=50000\n")[0].met
    assert v51.judge_accuracy("no-such-model", LLAMA2_ACCURACY) == []


def test_the_round_comes_from_the_option_then_the_path_then_loadgen(tmp_path):
    tree = tmp_path / "inference_results_v4.0" / "closed" / "Acme"
    assert rounds.pick_round(tree, "4.1", []) == ("v4.1", "--mlcommons-ruleset 4.1")
    assert rounds.pick_round(tree, None, ["4.1 @ abc"])[0] == "v4.0"
    name, how = rounds.pick_round(tmp_path / "x", None, ["4.0 @ 4a77003610", "5.1.0 @ 091d51f041"])
    assert name == "v5.1" and "4.0 @ 4a77003610" in how
    name, how = rounds.pick_round(tmp_path, None, [])
    assert name is None and "no LoadGen version" in how
    assert [rounds.normalise(t) for t in ("4.1", "v4.1", "4.1.0", "four")] == ["v4.1", "v4.1", "v4.1", None]
    for typo in ("9.9", "v4.l"):
        with pytest.raises(UserError, match="v4.0, v4.1, v5.0, v5.1, v6.0"):
            rounds.pick_round(tree, typo, [])


def test_a_rules_file_that_contradicts_the_shared_one_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "mlcommons"
    shutil.copytree(rounds.RULES_DIR, copy)
    path = copy / "inference_v4.1.yaml"
    path.write_text(path.read_text().replace("Offline: result_samples_per_second", "Offline: result_bogus"))
    monkeypatch.setattr(rounds, "RULES_DIR", copy)
    monkeypatch.setattr(rounds, "SHARED_FILE", copy / "inference.yaml")
    rounds.load_round.cache_clear()
    try:
        with pytest.raises(ValueError, match="result_bogus"):
            rounds.load_round("v4.1")
    finally:
        rounds.load_round.cache_clear()


def test_every_table_cites_the_lines_it_was_transcribed_from():
    """Beside each table of a round file: the checker's name for it and its line numbers (the file and commit
    are in the file's header)."""
    for name in ROUNDS:
        text = (rounds.RULES_DIR / f"inference_{name}.yaml").read_text()
        assert re.search(r"at commit [0-9a-f]{40}", text)
        tables = ("scenarios", "result_field", "result_field_overwrite", "models", "model_mapping")
        for key in (*tables, "accuracy_target", "accuracy_upper_limit"):
            # the comment block right above the table names its lines
            assert re.search(rf"\n# [^\n]*lines \d+-\d+[^\n]*\n(?:#[^\n]*\n)*{key}:", text), (name, key)


def test_the_shared_file_has_a_unit_for_every_key_and_a_pattern_for_every_metric():
    # load_round refuses a file that does not; this names the shared file's own figures.
    shared = Path(rounds.SHARED_FILE).read_text()
    assert "divide_by: 1000000" in shared and "MS_TO_NS" in shared
