"""Each process's share of the global batch and the batch-norm span against the rules: TRN022.

Each case edits one run of the example (ctr-dlrm, one process, rules 1.0) and reseals it; a failing edit
must give TRN022 alone, its passing twin nothing. Rules 1.1's per-process span (fmnist-resnet's
batch_norm_spans) is checked on the span table itself.
"""

from __future__ import annotations

import pytest
from test_checker_fixtures import EXAMPLE

from levelfield.checker.checks.process_shares import allowed_bn_spans
from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from tests.node_plants import _values, log_beside_world_size, log_nodes
from tests.submission_edit import copy_tree, edit_mllog, reseal, set_value


def _edited(tmp_path, edit) -> list:
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log = next(tree.rglob("ctr-dlrm/pytorch/training/result_0.txt"))
    batch = dict(_values(log))["global_batch_size"]
    edit(log, batch)
    reseal(tree)
    return check_tree(tree).active


def _only_trn022(findings, says: str) -> None:
    assert [(f.code, says in f.message) for f in findings] == [("TRN022", True)], [f.text() for f in findings]


def test_a_local_batch_that_is_not_the_share_gives_trn022(tmp_path):
    findings = _edited(tmp_path, lambda log, b: log_beside_world_size(log, LK.LOCAL_BATCH_SIZE, b // 2))
    _only_trn022(findings, f"{LK.LOCAL_BATCH_SIZE} is not global_batch_size")


def test_the_local_batch_of_one_process_passes(tmp_path):
    assert _edited(tmp_path, lambda log, b: log_beside_world_size(log, LK.LOCAL_BATCH_SIZE, b)) == []


def test_one_process_normalising_over_less_than_its_batch_gives_trn022(tmp_path):
    findings = _edited(tmp_path, lambda log, b: log_beside_world_size(log, "model_bn_span", b // 4))
    _only_trn022(findings, "model_bn_span is not a span the rules allow for 1 processes")


def test_one_process_normalising_over_its_batch_passes(tmp_path):
    assert _edited(tmp_path, lambda log, b: log_beside_world_size(log, "model_bn_span", b)) == []


def test_a_per_process_span_under_rules_that_list_none_gives_trn022(tmp_path):
    def two_processes_per_process_bn(log, batch):
        edit_mllog(log, LK.WORLD_SIZE, set_value(2))
        log_nodes(log, 1)
        log_beside_world_size(log, LK.LOCAL_BATCH_SIZE, batch // 2)
        log_beside_world_size(log, "model_bn_span", batch // 2)

    findings = [f for f in _edited(tmp_path, two_processes_per_process_bn) if f.code != "TRN020"]
    _only_trn022(findings, "(batch_norm_spans: none)")


@pytest.mark.parametrize(
    "world, spans, allowed",
    [
        (1, [], {256: "global"}),
        (2, [], {}),
        (2, ["per_process", "global"], {128: "per_process", 256: "global"}),
        (4, ["per_process"], {64: "per_process"}),
    ],
)
def test_the_spans_the_rules_allow(world, spans, allowed):
    assert allowed_bn_spans(256, world, spans) == allowed
