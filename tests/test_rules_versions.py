"""A tree is judged by the rules version it declares: a fresh 1.0 tree by 1.0, a fresh 1.1 tree by 1.1.

1.0 evaluates once per epoch (integer epoch_num); 1.1 every N samples with a
fractional epoch_num (levelfield/ground/eval_cadence.py). The same edit, an eval
moved off the cadence, is TRN019 under each version for that version's reason.
"""

from __future__ import annotations

import json
import shutil

import pytest

from levelfield.checker.engine import check_tree
from tests.conftest import example_rules_version, run_cli
from tests.submission_edit import edit_mllog, files
from tests.test_checker_fixtures import EXAMPLE

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _training_logs(tree):
    return [p for p in files(tree) if "/training/" in p.as_posix() and p.name.startswith("result_")]


def _eval_epochs(log) -> list:
    entries = [json.loads(line[len(":::MLLOG ") :]) for line in log.read_text().splitlines()]
    return [e["metadata"]["epoch_num"] for e in entries if e["key"] == "eval_accuracy"]


def _demo_tree(work, version: str):
    """ctr-dlrm in JAX, one demo-profile run under rules `version` (seconds), packaged with the example's
    system description brought up to this machine (what sysinfo observes here: kernel, cores, memory, ...)."""
    from levelfield.ground.sysinfo import VENDOR_PLACEHOLDERS, collect_system_description

    system = work / "box.json"
    described = json.loads(next(EXAMPLE.glob("*/*/systems/*.json")).read_text())
    observed = {k: v for k, v in collect_system_description().items() if k not in VENDOR_PLACEHOLDERS}
    system.write_text(json.dumps({**described, **observed}))
    trained = run_cli(
        *("train", "--task", "ctr-dlrm", "--framework", "jax", "--profile", "demo", "--rules-version", version),
        *("--runs", "1", "--seed", "7", "--system", str(system), "--out", str(work / "runs" / "jax-training")),
    )
    assert trained.returncode == 0, trained.stderr[-2000:]
    packaged = run_cli(
        *("package", "--runs", str(work / "runs"), "--system", str(system), "--org", "levelfield"),
        *("--division", "closed", "--out", str(work / "sub")),
    )
    assert packaged.returncode == 0, packaged.stderr[-2000:]
    return work / "sub"


@pytest.fixture(scope="module")
def tree_1_0(tmp_path_factory):
    return _demo_tree(tmp_path_factory.mktemp("rules10"), "1.0")


@pytest.fixture(scope="module")
def tree_1_1(tmp_path_factory):
    return _demo_tree(tmp_path_factory.mktemp("rules11"), "1.1")


def test_the_example_is_judged_by_the_version_it_declares():
    report = check_tree(EXAMPLE, select=["TRN019", "TRN009", "RUL001"])
    assert report.rules_version == example_rules_version() and report.active == []


def test_a_1_0_tree_is_judged_by_1_0_with_integer_epochs(tree_1_0):
    report = check_tree(tree_1_0, profile="demo")
    assert report.rules_version == "1.0"
    assert [(f.code, f.message) for f in report.active if f.severity == "error"] == []
    epochs = _eval_epochs(_training_logs(tree_1_0)[0])
    assert epochs and all(type(e) is int for e in epochs)


def test_a_1_1_tree_is_judged_by_1_1_and_checks_clean(tree_1_1):
    report = check_tree(tree_1_1, profile="demo")
    assert report.rules_version == "1.1"
    assert [(f.code, f.message) for f in report.active if f.severity == "error"] == []
    epochs = _eval_epochs(_training_logs(tree_1_1)[0])
    assert epochs[:3] == [0.25, 0.5, 0.75]  # a quarter epoch per eval, as 1.1's ctr-dlrm sets


def _last_eval_moved(source, dst, by_epochs: float):
    """A copy of the tree `source` whose first training log's last eval_accuracy claims `by_epochs` fewer."""
    shutil.copytree(source, dst)
    edit_mllog(
        _training_logs(dst)[0],
        "eval_accuracy",
        lambda e: {**e, "metadata": {**e["metadata"], "epoch_num": e["metadata"]["epoch_num"] - by_epochs}},
        -1,
    )
    return dst


def test_an_eval_off_the_1_1_cadence_is_trn019(tree_1_1, tmp_path):
    tree = _last_eval_moved(tree_1_1, tmp_path / "sub", 0.125)
    findings = check_tree(tree, profile="demo", select=["TRN019"]).active
    assert [f.code for f in findings] == ["TRN019"] and "evaluation" in findings[0].message


def test_a_fractional_epoch_in_a_1_0_tree_is_trn019(tree_1_0, tmp_path):
    tree = _last_eval_moved(tree_1_0, tmp_path / "sub", 0.5)
    findings = check_tree(tree, profile="demo", select=["TRN019"]).active
    assert [f.code for f in findings] == ["TRN019"] and "not an integer" in findings[0].message
