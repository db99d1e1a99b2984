"""Rules 1.2's fidelity gate as data: the pinned files and figures, the loader's cross-checks, the metric's
semantics, the runner's precision choice and the checker's precision check. No framework is imported.

    .venv/bin/python -m pytest tests/test_fidelity_rules.py -q

~5 s. The reduced-size numerics are tests/test_fidelity_{image,encoder,dlrm}.py; the full-size runs and the
checker on their trees tests/test_fidelity_smoke.py.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from levelfield.ground import fidelity
from levelfield.ground.errors import UserError
from levelfield.rules import load_suite
from tests.conftest import assert_user_error, run_cli

VERSION = "1.2"
SUITE = load_suite(VERSION)
GATED = sorted(t.id for t in SUITE.tasks.values() if "fidelity" in t.inference)


def test_every_standard_task_and_only_those_have_a_fidelity_gate():
    assert sorted(t.id for t in SUITE.tasks.values() if t.size_class == "standard") == GATED
    assert len(GATED) == 3
    assert all("fidelity" not in t.inference for t in load_suite("1.1").tasks.values())  # 1.1 stays as it was


@pytest.mark.parametrize("task_id", GATED)
def test_the_reference_file_is_the_one_the_rules_pin(task_id):
    task = SUITE.task(task_id)
    settings = task.inference["fidelity"]
    text = fidelity.reference_path(task).read_text()
    assert hashlib.sha256(text.encode()).hexdigest() == settings["reference"]["sha256"]
    reference = fidelity.load_reference(task)
    assert reference["task"] == task_id and reference["kind"] == settings["kind"]
    assert reference["samples"] == settings["samples"] == task.inference_samples
    assert reference["weights_sha256"] == settings["weights"]["sha256"]  # computed from the pinned weights
    assert settings["spread"] == reference["spread"]  # the figure the rules state is the file's
    assert fidelity.reference_path(task).stat().st_size < 1_000_000  # small rules data


@pytest.mark.parametrize("task_id", GATED)
def test_each_threshold_is_the_lowest_measured_agreement_less_the_margin(task_id):
    settings = SUITE.task(task_id).inference["fidelity"]
    for precision, threshold in settings["threshold"].items():
        measured = settings["measured"][precision]
        assert set(measured) == set(SUITE.frameworks), (precision, measured)
        assert threshold == round(min(measured.values()) - settings["margin"], 4), precision
        assert threshold > 0.5  # a gate a constant or random answer could pass would be none


@pytest.mark.parametrize("task_id", GATED)
def test_the_reference_outputs_depend_on_the_input(task_id):
    """The generators' point, stated as a figure in the rules: no class wins more than a tenth of the items
    (a constant answer agrees on at most that), and the input moves each class's logit by more than the
    loosest tolerance forgives; for the recommender, probabilities spread on both sides of one half."""
    settings = SUITE.task(task_id).inference["fidelity"]
    spread = settings["spread"]
    if settings["kind"] == "classes":
        assert spread["top_class_share"] < 0.1 and spread["distinct_top_classes"] > 10, spread
        assert spread["logit_std_over_inputs"] > 2 * max(settings["tolerance"].values()), spread
    else:
        assert spread["probability_std"] > 0.15 and 0.2 < spread["share_above_half"] < 0.8, spread


def test_a_reference_cut_at_a_smaller_gap_is_the_one_computed_at_that_gap():
    """How rules 1.2's class files were made small: the rows of a file written at max_gap 0.5, cut at 0.1, are
    what `levelfield fidelity reference` writes at 0.1 (the rounded gap decides), ties and boundaries included."""
    rng = np.random.default_rng(0)
    logits = np.round(rng.standard_normal((200, 3000)) * 0.15, 5)
    logits[:, 7] = logits.max(axis=1)  # a tie at the top: the lower class first
    wide = fidelity.classes_within(logits, 0.5, 4)
    for gap in (0.1, 0.0123):
        assert fidelity.classes_within(logits, gap, 4) == [[p for p in row if p[1] <= gap] for row in wide]
    assert any(row[-1][1] == 0.1 for row in fidelity.classes_within(logits, 0.1, 4))  # the boundary is met
    assert all(row[0][1] == 0.0 for row in wide) and max(len(row) for row in wide) < 3000


def test_a_reference_file_that_is_not_the_pinned_one_is_refused(rules_copy):
    path = rules_copy / VERSION / "fidelity" / "ctr-dlrm-standard.json"
    path.write_text(path.read_text().replace('"scores": [\n    0.', '"scores": [\n    1.', 1))
    task = load_suite(VERSION, rules_copy).task("ctr-dlrm-standard")
    with pytest.raises(ValueError, match="SHA-256 .* found / expected"):
        fidelity.load_reference(task)


@pytest.mark.parametrize(
    "edit, message",
    [
        (("tolerance: {fp32: 0.001, bf16: ", "tolerance: {fp32: 0.001, bf16: 0.9, fp16: "), "tolerance: precisions"),
        (("    samples: 512\n", "    samples: 4096\n"), "fidelity.samples: 4096 found / expected at most"),
        (("      max_gap: 0.1\n", "      max_gap: 0.05\n"), "tolerance.bf16: .* found / expected at most max_gap 0.05"),
    ],
)
def test_the_loader_refuses_a_gate_it_cannot_judge(rules_copy, edit, message):
    path = rules_copy / VERSION / "tasks" / "image-resnet50-standard.yaml"
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(UserError, match=message):
        load_suite(VERSION, rules_copy)


# --- the metric ------------------------------------------------------------------------------------


def classes_reference(candidates: list, items: list) -> dict:
    document = {"format": fidelity.FORMAT, "task": "t", "kind": "classes", "samples": 3, "max_gap": 0.5}
    return fidelity._parsed(fidelity.reference_text({**document, "items": items, "candidates": candidates}), "t")


def test_a_class_agrees_within_the_tolerance_of_the_reference_top():
    reference = classes_reference([[[4, 0.0], [7, 0.05]], [[2, 0.0]], [[9, 0.0], [1, 0.3]]], [[0, 0], [1, 0], [2, 0]])
    assert fidelity.class_agreement(reference, [4, 2, 9], 3, 0.001) == (1.0, 3)
    assert fidelity.class_agreement(reference, [7, 2, 1], 3, 0.001) == (1 / 3, 3)  # near-ties count at 0.1 only
    assert fidelity.class_agreement(reference, [7, 2, 1], 3, 0.1) == (2 / 3, 3)
    assert fidelity.class_agreement(reference, [-1, 5, 0], 3, 0.5) == (0.0, 3)  # NO_CLASS and unlisted classes
    assert fidelity.class_agreement(reference, [4], 1, 0.001) == (1.0, 1)  # a smoke run: the first samples
    with pytest.raises(ValueError, match="max_gap"):
        fidelity.class_agreement(reference, [4, 2, 9], 3, 0.6)


def test_a_score_agrees_within_the_tolerance_and_never_when_not_finite():
    reference = {"kind": "scores", "scores_array": np.array([0.5, 0.9, 0.1, 0.5])}
    logits = np.array([0.0, np.log(9.0) + 0.01, np.nan, np.inf])
    value, rows = fidelity.score_agreement(reference, logits, 0.01)
    assert (value, rows) == (0.5, 4)


def test_coarse_rounding_hides_last_bit_differences():
    """What makes the generated weights' SHA-256 hold on another BLAS: float64 sums that differ in their
    last bits round to the same 16-bit value, which float32 holds exactly."""
    values = np.random.default_rng(0).standard_normal(10_000) * 10.0 ** np.random.default_rng(1).integers(-6, 6, 10_000)
    noisy = values * (1 + 4e-16 * np.random.default_rng(2).standard_normal(10_000))
    assert np.array_equal(fidelity.coarse(values), fidelity.coarse(noisy))
    assert np.array_equal(fidelity.coarse(values).astype(np.float32).astype(np.float64), fidelity.coarse(values))


# --- the runner's precision choice and the checker's INF020 --------------------------------------------


def test_a_precision_the_rules_do_not_allow_is_refused_before_any_work(tmp_path):
    result = run_cli(
        *("infer", "--task", "seq-transformer-standard", "--rules-version", VERSION, "--framework", "pytorch"),
        *("--scenario", "offline", "--mode", "accuracy", "--profile", "smoke", "--precision", "fp16"),
        *("--out", str(tmp_path / "run")),
    )
    assert_user_error(result, "--precision fp16 found / expected one of fp32, bf16", "seq-transformer-standard.yaml")
    assert not (tmp_path / "run").exists()


def test_a_tiny_task_runs_fp32_only(tmp_path):
    assert fidelity.precisions(SUITE.task("ctr-dlrm")) == ["fp32"]
    assert fidelity.precisions(SUITE.task("fmnist-resnet")) == ["fp32"]  # the training default
    assert fidelity.precisions(SUITE.task("image-resnet50-standard")) == ["fp32", "bf16"]


def test_the_accuracy_json_schema_takes_both_shapes():
    from levelfield.ground.validation import validate

    fidelity_score = {
        "status": "completed", "metric": "top1_agreement", "gate": "fidelity", "value": 1.0, "precision": "bf16",
        "tolerance": 0.1, "threshold": 0.99, "pass": True, "samples": 8, "items": 8, "reference_sha256": "0" * 64,
    }  # fmt: skip
    validate(fidelity_score, "accuracy", "accuracy.json")
    with pytest.raises(UserError):
        validate({**fidelity_score, "reference_value": 0.75}, "accuracy", "accuracy.json")
    json.dumps(fidelity_score)


@pytest.mark.parametrize(
    "precision, codes", [("fp32", []), ("bf16", ["INF017", "INF020"]), ("fp16", ["INF017", "INF020"])]
)
def test_inf020_holds_a_recorded_precision_to_the_rules(precision, codes, tmp_path):
    """The example (ctr-dlrm, fp32 only) with a precision written into one run's result.json: fp32 is what ran
    and is allowed; another is refused (INF020), and differs from the other mode's run (INF017's identity)."""
    from levelfield.checker.engine import check_tree
    from tests.submission_edit import copy_tree, edit_json, first, reseal
    from tests.test_checker_fixtures import EXAMPLE

    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_json(first(tree, "accuracy/result.json"), lambda data: data.update(precision=precision))
    edit_json(first(tree, "performance/result.json"), lambda data: data.update(precision="fp32"))
    reseal(tree)
    findings = check_tree(tree, select=["INF017", "INF020"]).active
    assert sorted({f.code for f in findings}) == codes, [str(f) for f in findings]
