"""`levelfield infer --find-peak`: Server's largest VALID target, found run by run and written for the real run.

Framework `none` at 1 ms per sample (reference/null_model.py) serves at most
~1,000 samples/s however it batches, so the peak is known in advance: the
search must end between the sized default and that capacity (plus what a short
run's backlog hides), with the step above the peak INVALID, and the written
settings file must give a VALID run.
"""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import assert_user_error, infer_cli, infer_options
from levelfield.harness.find_peak import (
    FALLBACK_TRIES,
    REPORT_FILE,
    TARGET_FILE,
    VERIFY_TRIES,
    _Search,
    find_peak,
)
from levelfield.harness.runner import infer
from levelfield.reference.null_model import CostModel

pytestmark = pytest.mark.serial  # the peak found depends on the CPU time the run gets

TASK = "ctr-dlrm"
COST = CostModel(per_call_us=0, per_sample_us=1000)  # at most ~1,000 samples/s
CAPACITY_QPS = 1e6 / COST.per_sample_us


def _smoke_server() -> dict:
    from levelfield.rules import load_suite

    return load_suite().task(TASK).loadgen_settings("smoke", "server")


@pytest.fixture(scope="module")
def peak(tmp_path_factory):
    out = tmp_path_factory.mktemp("peak")
    # Verified with 3 repeats, as the demo and submission profiles' real runs have (smoke has 1).
    options = infer_options(TASK, "none", "server", "performance", out, null_cost=COST, repeats=3)
    return out, options, find_peak(options, report=lambda line: None)


def test_the_search_brackets_the_peak(peak):
    out, _, document = peak
    steps, best = document["steps"], document["peak"]
    assert json.loads((out / REPORT_FILE).read_text()) == document
    search = [s for s in steps if s["repeats"] == 1]
    valid = [s["target_qps"] for s in search if s["valid"]]
    invalid = [s["target_qps"] for s in search if not s["valid"]]
    edge = max(valid)
    assert invalid and edge < min(t for t in invalid if t > edge) <= edge * 1.05 or len(search) == 12, steps
    # The written peak passed every one of the real run's repeats, at the edge or a few percent under it.
    assert best["repeats"] == 3 and best["target_qps"] <= edge and steps[-1]["valid"]
    assert best["target_qps"] >= edge * 0.95**3
    # A run may offer more than the capacity as long as the backlog it builds stays under the latency
    # bound: over a run of min_duration the excess is at most bound x capacity samples (the reason
    # MLPerf runs 600 s; a submission here runs 60 s against a bound of at most 100 ms).
    rules = _smoke_server()
    excess = rules["latency_bound_ms"] / rules["min_duration_ms"]
    assert 0.3 * CAPACITY_QPS < best["target_qps"] <= 1.05 * CAPACITY_QPS * (1 + excess), steps
    for step in steps:  # every step is a run of its own, kept as evidence
        assert (out / "steps" / f"step_{step['step']}" / "run_1" / "mlperf_log_detail.txt").is_file()


def test_the_written_settings_give_a_valid_run_at_the_peak(peak, tmp_path):
    out, options, document = peak
    conf = yaml.safe_load((out / TARGET_FILE).read_text())
    written = round(document["peak"]["target_qps"] * (1 - 0.05), 3)  # the peak less the search's precision
    assert document["written_target_qps"] == written
    assert conf == {
        "version": 1,
        "server": {"target_qps": written, "max_batch_size": document["peak"]["max_batch_size"]},
    }
    result = infer(
        infer_options(
            TASK,
            "none",
            "server",
            "performance",
            tmp_path / "run",
            null_cost=COST,
            user_conf=out / TARGET_FILE,
            repeats=1,
        )
    )
    assert result["valid"], result["invalid_reasons"]
    assert result["sizing"]["user"] == ["max_batch_size", "target_qps"] and not result["sizing"]["batch_costs"]


def test_find_peak_is_for_server_performance_only(tmp_path):
    proc = infer_cli(tmp_path, TASK, "none", "offline", "performance", "--cost-per-sample-us", "10", "--find-peak")
    assert_user_error(proc, "--find-peak", "Server", "offline performance")


def test_a_user_target_cannot_be_searched(tmp_path):
    conf = tmp_path / "user.yaml"
    conf.write_text("version: 1\nserver: {target_qps: 100}\n")
    proc = infer_cli(
        tmp_path / "peak",
        TASK,
        "none",
        "server",
        "performance",
        "--cost-per-sample-us",
        "10",
        "--find-peak",
        "--user-conf",
        str(conf),
    )
    assert_user_error(proc, str(conf), "target_qps", "--find-peak")


def test_cost_flags_belong_to_framework_none(tmp_path):
    proc = infer_cli(tmp_path, TASK, "jax", "offline", "performance", "--cost-per-sample-us", "10")
    assert_user_error(proc, "--cost-per-sample-us", "none", "jax")
    proc = infer_cli(tmp_path, TASK, "none", "offline", "performance", "--cost-per-sample-us", "-1")
    assert_user_error(proc, "per_sample_us", "-1")


class _ScriptedSearch(_Search):
    """_Search whose runs are VALID below `edge_qps` only: the verdicts of a system whose batches grow into
    a slower regime near the peak, so every target a few percent under it fails too."""

    def __init__(self, edge_qps: float, steps: list[dict]):
        self.edge_qps, self.steps = edge_qps, steps

    def step(self, target, repeats=1):
        record = {
            "step": len(self.steps) + 1,
            "target_qps": target,
            "valid": target < self.edge_qps,
            "repeats": repeats,
        }
        self.steps.append(record)
        return record


def test_verification_falls_back_to_the_search_s_lower_valid_targets():
    search_steps = [
        {"step": 1, "target_qps": 1690.0, "valid": True, "repeats": 1},
        {"step": 2, "target_qps": 3381.0, "valid": False, "repeats": 1},
        {"step": 3, "target_qps": 2390.0, "valid": True, "repeats": 1},
    ]
    search = _ScriptedSearch(edge_qps=1700.0, steps=search_steps)
    search.options = infer_options(TASK, "none", "server", "performance", None, repeats=3)
    checked = search.verify(search_steps[2], 0.05)
    tried = [s["target_qps"] for s in search.steps[3:]]
    assert tried[:VERIFY_TRIES] == pytest.approx([2390.0 * 0.95**k for k in range(VERIFY_TRIES)])
    # 2390 * 0.95**3 = 2049 failed; the only lower VALID search target is 1690, and it holds.
    assert tried[VERIFY_TRIES:] == [1690.0] and len(tried) <= VERIFY_TRIES + FALLBACK_TRIES
    assert checked["target_qps"] == 1690.0 and checked["valid"] and checked["repeats"] == 3


def test_verification_gives_up_when_nothing_holds():
    search_steps = [{"step": 1, "target_qps": 1690.0, "valid": True, "repeats": 1}]
    search = _ScriptedSearch(edge_qps=0.0, steps=search_steps)
    search.options = infer_options(TASK, "none", "server", "performance", None, repeats=3)
    assert search.verify(search_steps[0], 0.05) is None
    assert len(search.steps) == 1 + VERIFY_TRIES  # nothing VALID lies below the tries
