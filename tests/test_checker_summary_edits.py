"""LoadGen's own files edited in a resealed copy of the example: its error counts (INF002) and every figure
of mlperf_log_summary.txt against the detail log (INF018), in every scenario and on a real INVALID run.

Split from test_checker_edits.py, which sweeps the other values a vendor can edit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_checker_edits import _codes_after
from test_checker_fixtures import EXAMPLE

from levelfield.checker.engine import check_tree
from tests.conftest import run_cli
from tests.submission_edit import copy_tree, first


def _detail_log(*lines: tuple[str, object, dict]):
    from levelfield.ground.parse import parse_mllog

    text = "".join(
        ":::MLLOG "
        + json.dumps(
            {"key": k, "value": v, "time_ms": 0.0, "namespace": "", "event_type": "POINT_IN_TIME", "metadata": m}
        )
        + "\n"
        for k, v, m in lines
    )
    return parse_mllog(text.encode(), "mlperf_log_detail.txt")


def test_loadgen_errors_are_counted_as_inf002_counts_them():
    """The flagged lines (what the runner counts), or LoadGen's num_errors when none is flagged."""
    from levelfield.checker.checks.result_file import error_counts, flagged_errors

    counted = _detail_log(("num_errors", 2, {}))
    assert (flagged_errors(counted), error_counts(counted)) == (0, {0, 2})
    flagged = _detail_log(("num_errors", 0, {}), ("error_runtime", "x", {"is_error": True}))
    assert (flagged_errors(flagged), error_counts(flagged)) == (1, {1})


def _summary(tree):
    return first(tree, "offline/performance/run_1/mlperf_log_summary.txt")


def _edit_summary_line(tree, label: str, change) -> None:
    """Replace the value of the summary's first `label :` line by change(value); None drops the line."""
    path = _summary(tree)
    lines = path.read_text().splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if " ".join(line.partition(":")[0].split()) == label)
    head, _, value = lines[i].partition(":")
    new = change(value.strip())
    lines[i] = "" if new is None else f"{head}: {new}\n"
    path.write_text("".join(lines))


def _doubled(value: str) -> str:
    return f"{float(value) * 2:g}"


# summary label -> how the edit changes its printed value (None: the line is dropped)
SUMMARY_EDITS = {
    "Scenario": lambda v: "Server",
    "Mode": lambda v: "AccuracyOnly",
    "Samples per second": _doubled,
    "Min duration satisfied": lambda v: "No",
    "Min queries satisfied": lambda v: None,
    "Early stopping satisfied": lambda v: "No",
    "Min latency (ns)": _doubled,
    "Max latency (ns)": _doubled,
    "Mean latency (ns)": _doubled,
    "50.00 percentile latency (ns)": _doubled,
    "99.90 percentile latency (ns)": lambda v: None,
}


@pytest.mark.parametrize("label", sorted(SUMMARY_EDITS))
def test_an_edited_summary_figure_gives_inf018(label, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    _edit_summary_line(tree, label, SUMMARY_EDITS[label])
    assert _codes_after(tree) == {"INF018"}
    findings = check_tree(tree, select=["INF018"]).active
    assert [f'"{label}"' in f.message for f in findings] == [True]


def test_a_summary_figure_is_equal_within_loadgens_rounding(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    _edit_summary_line(tree, "Samples per second", lambda v: f"{float(v) + 0.4:.6g}")  # 6 significant digits
    assert check_tree(tree, select=["INF018"]).active == []


# Each scenario's summary, as LoadGen 6.0.17 printed it, and the values of its detail log.
SCENARIO_SUMMARIES = {
    "server": (
        "Scenario : Server\nMode     : PerformanceOnly\nCompleted samples per second    : 692.84\n"
        "  Performance constraints satisfied : Yes\nScheduled samples per second : 692.86\n"
        "99.00 percentile latency (ns)   : 14431043\n",
        {
            "effective_scenario": "Server",
            "effective_test_mode": "PerformanceOnly",
            "result_completed_samples_per_sec": 692.839,
            "result_scheduled_samples_per_sec": 692.862,
            "result_perf_constraints_met": True,
            "result_99.00_percentile_latency_ns": 14431043,
        },
    ),
    "multistream": (
        "Scenario : MultiStream\n99.0th percentile latency (ns) : 8659821\nPer-query latency:  \n"
        "Min latency (ns)                : 2977243\n99.00 percentile latency (ns)   : 8659821\n",
        {
            "effective_scenario": "MultiStream",
            "effective_target_latency_percentile": 0.99,
            "result_min_query_latency_ns": 2977243,
            "result_99.00_percentile_per_query_latency_ns": 8659821,
            "result_min_latency_ns": 2977243,
            "result_99.00_percentile_latency_ns": 8659821,
        },
    ),
    "singlestream": (
        "Scenario : SingleStream\n90.0th percentile latency (ns) : 1112458\n"
        "QPS w/ loadgen overhead         : 1015.55\nQPS w/o loadgen overhead        : 1021.97\n"
        "90.00 percentile latency (ns)   : 1112458\n",
        {
            "effective_scenario": "SingleStream",
            "effective_target_latency_percentile": 0.9,
            "result_90.00_percentile_latency_ns": 1112458,
            "result_qps_with_loadgen_overhead": 1015.55,
            "result_qps_without_loadgen_overhead": 1021.97,
        },
    ),
}


@pytest.fixture(scope="module")
def invalid_server_run(tmp_path_factory) -> Path:
    """A real INVALID LoadGen run: Server at 20,000 queries/s against a 2 ms-per-call model of framework
    none (one sample per call), so the latency bound and early stopping both fail."""
    folder = tmp_path_factory.mktemp("invalid")
    conf = folder / "user.yaml"
    conf.write_text("version: 1\nserver:\n  target_qps: 20000\n  max_batch_size: 1\n")
    result = run_cli(
        *("infer", "--task", "ctr-dlrm", "--framework", "none", "--cost-per-call-us", "2000"),
        *("--scenario", "server", "--mode", "performance", "--profile", "smoke", "--quiet"),
        *("--user-conf", str(conf), "--out", str(folder / "run")),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (run,) = (folder / "run").rglob("mlperf_log_summary.txt")
    return run.parent


def test_a_real_invalid_runs_no_is_loadgens_false(invalid_server_run):
    """LoadGen prints "NO" for a constraint that failed: the summary agrees with its detail log's false."""
    from levelfield.checker.checks.summary_file import _same, expected_lines, summary_lines
    from levelfield.ground.parse import parse_mllog

    summary = (invalid_server_run / "mlperf_log_summary.txt").read_text()
    detail = parse_mllog((invalid_server_run / "mlperf_log_detail.txt").read_bytes(), "detail").values()
    printed, expected = summary_lines(summary), expected_lines(detail)
    assert "Result is : INVALID" in summary and detail["early_stopping_met"] is False
    for label in ("Performance constraints satisfied", "Early stopping satisfied"):
        assert printed[label][1] == "NO" and detail[expected[label]] is False
    assert [label for label, key in expected.items() if not _same(printed[label][1], detail[key])] == []
    assert not _same("Yes", detail["early_stopping_met"]) and not _same("No", detail["early_stopping_met"])


@pytest.mark.parametrize("scenario", sorted(SCENARIO_SUMMARIES))
def test_every_scenarios_summary_figures_are_read(scenario):
    from levelfield.checker.checks.summary_file import _same, expected_lines, summary_lines

    text, values = SCENARIO_SUMMARIES[scenario]
    printed, expected = summary_lines(text), expected_lines(values)
    assert set(expected) == set(printed) - {"Per-query latency"}
    assert all(_same(printed[label][1], values[key]) for label, key in expected.items())
    doubled = {key: value * 2 if not isinstance(value, (bool, str)) else value for key, value in values.items()}
    numbers = [label for label, key in expected.items() if not isinstance(values[key], (bool, str))]
    assert numbers and not any(_same(printed[label][1], doubled[expected[label]]) for label in numbers)
