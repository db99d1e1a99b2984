"""What each run of a training result says ran it, edited in a resealed copy of the example: TRN020.

Every run of a result must log the first run's framework build, compile mode, determinism settings,
device and process count; a log's framework version must be its environment's, its determinism mode its
compile mode, and its quality metric the rules'. A key left out is TRN001's, precision TRN016's.
"""

from __future__ import annotations

import pytest
from test_checker_fixtures import EXAMPLE, _training_log

from levelfield.checker.engine import check_tree
from levelfield.ground.parse import same_value
from tests.submission_edit import copy_tree, edit_mllog, first, reseal, set_value

# --- what each run of a result says ran it (TRN020) ---------------------------------------------------
RESULT_FOLDERS = sorted({p.parent for p in EXAMPLE.rglob("training/result_*.txt")})
IDENTITY_EDITS = {
    "levelfield_framework_version": lambda v: v + ".post1",
    "levelfield_compile_mode": lambda v: "eager" if v == "compiled" else "compiled",
    "levelfield_determinism": lambda v: {**v, "threads": {name: n + 1 for name, n in v["threads"].items()}},
    "levelfield_device": lambda v: v + "1",
    "levelfield_world_size": lambda v: v + 1,
}
# An edit that keeps the run consistent in itself, so that only its difference from the first run shows:
# twice the processes, each with half the batch (else TRN022 sees the local batch disagree).
COMPANION_EDITS = {"levelfield_world_size": ("levelfield_local_batch_size", lambda v: v // 2)}


@pytest.mark.parametrize("key", sorted(IDENTITY_EDITS))
def test_a_run_unlike_the_first_gives_trn020(key, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree, 2), key, lambda e: {**e, "value": IDENTITY_EDITS[key](e["value"])})
    if key in COMPANION_EDITS:
        other, change = COMPANION_EDITS[key]
        edit_mllog(_training_log(tree, 2), other, lambda e: {**e, "value": change(e["value"])})
    reseal(tree)
    findings = check_tree(tree).active
    assert {(f.code, f.path.endswith("result_2.txt"), key in f.message) for f in findings} == {("TRN020", True, True)}


def _edit_every_run(tree, folder, key, change):
    for log in sorted((tree / folder.relative_to(EXAMPLE)).glob("result_*.txt")):
        edit_mllog(log, key, change)


@pytest.mark.parametrize("folder", RESULT_FOLDERS, ids=[f.parent.name for f in RESULT_FOLDERS])
def test_a_framework_version_unlike_the_environment_gives_trn020_in_every_framework(folder, tmp_path):
    # Every run alike: only the environment beside each version disagrees with it.
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    _edit_every_run(tree, folder, "levelfield_framework_version", lambda e: {**e, "value": e["value"] + ".post1"})
    reseal(tree)
    findings = check_tree(tree).active
    assert {f.code for f in findings} == {"TRN020"}
    assert len(findings) == len(list(folder.glob("result_*.txt")))
    assert all("levelfield_environment" in f.message for f in findings)


def test_a_determinism_mode_unlike_the_compile_mode_gives_trn020(tmp_path):
    # Every run alike, so only the mode against the run's own levelfield_compile_mode disagrees.
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    folder = RESULT_FOLDERS[0]
    _edit_every_run(tree, folder, "levelfield_determinism", lambda e: {**e, "value": {**e["value"], "mode": "eager"}})
    reseal(tree)
    findings = check_tree(tree).active
    assert {f.code for f in findings} == {"TRN020"}
    assert len(findings) == len(list(folder.glob("result_*.txt")))
    assert all("levelfield_determinism's mode differs from levelfield_compile_mode" in f.message for f in findings)


def test_a_switch_false_written_as_0_is_not_the_first_runs_gives_trn020(tmp_path):
    # JSON's false and 0 are different values (Python's == inside a dict says equal): `make fuzz` found it.
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log = first(tree, "/jax/training/result_2.txt")

    def zero(entry):
        switches = entry["value"]["framework"]
        assert switches["jax_enable_x64"] is False  # the switch the example's JAX runs log
        return {**entry, "value": {**entry["value"], "framework": {**switches, "jax_enable_x64": 0}}}

    edit_mllog(log, "levelfield_determinism", zero)
    reseal(tree)
    findings = check_tree(tree).active
    assert [(f.code, f.path.split("/")[-1]) for f in findings] == [("TRN020", "result_2.txt")]


def test_same_value_compares_members_by_type():
    assert same_value({"a": [1, {"b": False}]}, {"a": [1, {"b": False}]}, 0.0)
    assert not same_value({"b": False}, {"b": 0}, 0.0) and not same_value([True], [1], 0.0)
    assert same_value({"x": 0.1}, {"x": 0.1 + 1e-12}, 1e-9) and not same_value({"x": 1}, {"x": 1, "y": 2}, 0.0)


def test_the_example_logs_its_determinism_settings_in_every_run():
    """The passing side of the two TRN020 determinism edits: every run logs the key, its mode the run's."""
    for log in EXAMPLE.rglob("training/result_*.txt"):
        text = log.read_text(encoding="utf-8")
        assert text.count('"key": "levelfield_determinism"') == 1, log
    assert check_tree(EXAMPLE, select=["TRN020"]).active == []


def test_a_quality_metric_other_than_the_rules_gives_trn020(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    _edit_every_run(tree, RESULT_FOLDERS[0], "levelfield_quality_metric", set_value("top1_accuracy"))
    reseal(tree)
    findings = check_tree(tree).active
    assert {(f.code, "levelfield_quality_metric" in f.message) for f in findings} == {("TRN020", True)}


def test_a_precision_unlike_the_first_run_is_trn016s_not_trn020s(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree, 2), "levelfield_precision", set_value("bf16"))
    reseal(tree)
    assert {f.code for f in check_tree(tree, select=["TRN016", "TRN020"]).active} == {"TRN016"}


@pytest.mark.parametrize("run", [0, 2])
@pytest.mark.parametrize("key", sorted(IDENTITY_EDITS))
def test_an_identity_key_left_out_is_not_trn020(key, run, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree, run), key, lambda e: None)
    reseal(tree)
    assert check_tree(tree, select=["TRN020"]).active == []
