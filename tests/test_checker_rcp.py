"""TRN009 and TRN021 with reference convergence points (`checks.convergence_test: rcp`, rules 1.1's method).

The example submission is checked against a copy of the rules of its own version whose suite names the
rcp method and whose ctr-dlrm task holds synthetic points (rules_with_rcp_points), so these tests do
not depend on the shipped calibration. The example's epochs to target (rules 1.1, evaluated every
quarter epoch): pytorch and tensorflow 1.25, 1.5, 1.75, 1.0, 1.5 (olympic mean 1.417), jax 1.0, 1.5,
1.75, 1.5, 1.5 (olympic mean 1.5); global_batch_size 1024.
"""

from __future__ import annotations

import pytest
from test_checker_fixtures import EXAMPLE, HONEST_RCP

import levelfield.checker.checks  # noqa: F401 - registers every check
from levelfield.checker.engine import check_tree
from tests.rules_copies import rules_with_rcp_points
from tests.submission_edit import copy_tree, edit_mllog, first, reseal, set_value

# Slower at a larger batch size, as recipes are: mean 2.02 epochs, stdev 0.33.
SLOWER_RCP = {
    "pytorch": [1.5, 2.0, 1.75, 2.25, 2.5],
    "tensorflow": [2.0, 1.75, 1.75, 2.25, 2.5],
    "jax": [1.75, 2.0, 2.25, 1.5, 2.5],
}
# Most runs at 1.5 epochs, a few at 1.75: mean 1.538, stdev 0.1, minimum acceptable mean 1.426, between
# the example's pytorch and tensorflow (1.417) and its jax (1.5).
TIGHT_RCP = {
    "pytorch": [1.5, 1.5, 1.5, 1.75, 1.5],
    "tensorflow": [1.5, 1.5, 1.75, 1.5, 1.5],
    "jax": [1.5, 1.5, 1.5, 1.75, 1.5],
}
# Every reference run needed 4 to 6 epochs.
SLOW_RCP = {"pytorch": [4, 5, 4.5, 5, 6], "tensorflow": [4, 4.5, 5, 5.5, 5], "jax": [4.5, 5, 4, 5, 6]}


def _findings(tmp_path, points: dict) -> list:
    rules = rules_with_rcp_points(tmp_path, points)
    return check_tree(EXAMPLE, rules_dir=str(rules)).active


def test_an_honest_result_at_a_calibrated_batch_size_checks_clean(tmp_path):
    assert [f.text() for f in _findings(tmp_path, {512: SLOWER_RCP, 1024: HONEST_RCP, 2048: SLOWER_RCP})] == []


def test_an_honest_result_at_an_interpolated_batch_size_checks_clean(tmp_path):
    assert [f.text() for f in _findings(tmp_path, {512: HONEST_RCP, 2048: SLOWER_RCP})] == []


def test_a_result_faster_than_the_reference_allows_is_trn009(tmp_path):
    found = _findings(tmp_path, {1024: SLOW_RCP})
    assert sorted((f.code, f.path.split("/")[-2]) for f in found) == [
        ("TRN009", "jax"),
        ("TRN009", "pytorch"),
        ("TRN009", "tensorflow"),
    ]
    pytorch = next(f for f in found if "/pytorch/" in f.path)
    text = pytorch.text()
    assert "found olympic mean 1.417 epochs at global_batch_size 1024" in text
    assert "expected >= 4.149 epochs (reference calibrated at 1024: mean 4.846, stdev 0.618, 13 runs))" in text


def test_the_test_is_per_result_and_reads_the_olympic_mean(tmp_path):
    # Minimum acceptable mean 1.426: pytorch's and tensorflow's olympic mean 1.417 is below it, jax's 1.5 above.
    found = _findings(tmp_path, {1024: TIGHT_RCP})
    assert sorted((f.code, f.path.split("/")[-2]) for f in found) == [("TRN009", "pytorch"), ("TRN009", "tensorflow")]
    assert all("olympic mean 1.417 epochs" in f.text() and ">= 1.426 epochs" in f.text() for f in found)


def test_an_interpolated_reference_flags_too(tmp_path):
    found = _findings(tmp_path, {512: TIGHT_RCP, 2048: SLOW_RCP})
    assert {f.code for f in found} == {"TRN009"} and len(found) == 3
    assert all(
        "(reference interpolated between 512 and 2048: mean 2.641, stdev 0.273, 13 runs))" in f.text() for f in found
    )


@pytest.mark.parametrize("sizes", [(2048, 4096), (256, 512)], ids=["below", "above"])
def test_a_batch_size_outside_the_calibrated_range_is_trn021_never_a_skip(tmp_path, sizes):
    found = _findings(tmp_path, dict.fromkeys(sizes, HONEST_RCP))
    assert sorted((f.code, f.path.split("/")[-2]) for f in found) == [
        ("TRN021", "jax"),
        ("TRN021", "pytorch"),
        ("TRN021", "tensorflow"),
    ]
    assert f"within [{sizes[0]}, {sizes[1]}]" in found[0].text()


@pytest.mark.parametrize(
    "key, change",
    [
        ("global_batch_size", set_value([])),
        ("global_batch_size", set_value("1024")),
        ("global_batch_size", set_value(True)),
        ("global_batch_size", set_value(1e300)),
        ("global_batch_size", set_value(-1024)),
        ("eval_accuracy", lambda e: {**e, "metadata": {**e["metadata"], "epoch_num": 10**29}}),
        ("eval_accuracy", lambda e: {**e, "metadata": {**e["metadata"], "epoch_num": "2"}}),
    ],
    ids=["list", "string", "bool", "huge", "negative", "huge-epoch", "string-epoch"],
)
def test_hostile_values_never_crash_the_rcp_checks(tmp_path, key, change):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(first(tree, "pytorch/training/result_0.txt"), key, change, -1)
    reseal(tree)
    rules = rules_with_rcp_points(tmp_path, {512: HONEST_RCP, 2048: HONEST_RCP})
    report = check_tree(tree, rules_dir=str(rules), select=["TRN"])
    assert "CHK001" not in {f.code for f in report.findings}, [f.text() for f in report.findings]


def test_a_demo_check_does_not_judge_convergence(tmp_path):
    rules = rules_with_rcp_points(tmp_path, {1024: SLOW_RCP})
    report = check_tree(EXAMPLE, rules_dir=str(rules), profile="demo", select=["TRN009", "TRN021"])
    assert report.active == []


def test_the_shipped_1_0_rules_keep_the_welch_test():
    from levelfield.rules import load_suite

    assert load_suite("1.0").convergence_test == "welch"
    assert load_suite("1.1").convergence_test == "rcp"
