"""TRN026: a training-log key that neither MLPerf, levelfield nor the rules know (a warning).

The planted defect is in tests/log_key_plants.py (test_checker_fixtures.py runs it); the example, whose logs
`levelfield train` wrote, is the passing fixture there.
"""

from __future__ import annotations

from test_checker_fixtures import EXAMPLE

from levelfield.checker.engine import check_tree
from tests.conftest import run_cli
from tests.log_key_plants import log_extra_key
from tests.submission_edit import copy_tree, reseal


def _tree_with(tmp_path, *keys: str):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log = next(tree.rglob("training/result_0.txt"))
    for key in keys:
        log_extra_key(log, key, 0.1)
    reseal(tree)
    return tree


def test_a_misspelt_hyperparameter_key_is_named_once_per_log(tmp_path):
    # opt_base_learning_rate stays logged; the misspelt copy beside it is what no check would read.
    tree = _tree_with(tmp_path, "opt_base_learnig_rate", "opt_base_learnig_rate", "levelfield_lr_hack")
    findings = check_tree(tree, select=["TRN026"]).active
    assert [(f.code, f.found) for f in findings] == [
        ("TRN026", "opt_base_learnig_rate"),
        ("TRN026", "levelfield_lr_hack"),
    ]
    assert all(f.path.endswith("training/result_0.txt") and f.line for f in findings)


def test_keys_mlperf_or_the_rules_know_are_not_flagged(tmp_path):
    # model_bn_span is MLPerf's (batch-norm tasks log it); levelfield_label_smoothing is a hyperparameter key
    # of the rules, logged by the image task; neither is unknown in a ctr-dlrm log.
    tree = _tree_with(tmp_path, "model_bn_span", "levelfield_label_smoothing")
    assert check_tree(tree, select=["TRN026"]).active == []


def test_an_unknown_key_warns_without_failing_the_tree(tmp_path):
    result = run_cli("check", str(_tree_with(tmp_path, "my_vendor_flag")))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TRN026" in result.stdout and "my_vendor_flag" in result.stdout
