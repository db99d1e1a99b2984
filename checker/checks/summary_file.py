"""mlperf_log_summary.txt's figures against the detail log beside it: one LoadGen run wrote both.

LoadGen prints its human summary from the same values it logs in
mlperf_log_detail.txt, e.g. (Offline):

    Scenario : Offline
    Mode     : PerformanceOnly
    Samples per second: 327887
    Result is : VALID
      Min duration satisfied : Yes
    ...
    90.00 percentile latency (ns)   : 82225596915

Each figure is compared with its detail-log key; the verdict ("Result is") is
INF007's. The summary prints numbers rounded (6 significant digits, or 2
decimals), so numbers are equal within that rounding. A line the summary lacks
is a finding only when the detail log holds its value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground.parse import finite_number

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission

# The rounding of LoadGen's printed numbers: C++ stream default (6 significant digits) or 2 decimals.
_PRINTED_RTOL, _PRINTED_ATOL = 5e-6, 0.005
_YES_NO = {"Yes": True, "NO": False}  # LoadGen's own words (results.cc): "Yes", and "NO" in capitals
_STATS = re.compile(r"^result_(min|max|mean)_(query_)?latency_ns$")
_PERCENTILE = re.compile(r"^result_(\d+\.\d\d)_percentile_(per_query_)?latency_ns$")
# summary label -> detail-log key, figures every scenario (or the one that logs the key) prints
_FIXED = {
    "Scenario": "effective_scenario",
    "Mode": "effective_test_mode",
    "Samples per second": "result_samples_per_second",  # Offline
    "Completed samples per second": "result_completed_samples_per_sec",  # Server
    "Scheduled samples per second": "result_scheduled_samples_per_sec",  # Server
    "QPS w/ loadgen overhead": "result_qps_with_loadgen_overhead",  # SingleStream
    "QPS w/o loadgen overhead": "result_qps_without_loadgen_overhead",  # SingleStream
    "Min duration satisfied": "result_min_duration_met",
    "Min queries satisfied": "result_min_queries_met",
    "Performance constraints satisfied": "result_perf_constraints_met",  # Server
    "Early stopping satisfied": "early_stopping_met",
}


def summary_lines(summary: str) -> dict[str, tuple[int, str]]:
    """{label: (line number, value)} of the summary's "label : value" lines, the first of each label,
    labels with their runs of spaces collapsed ("Mode     " is "Mode")."""
    out: dict[str, tuple[int, str]] = {}
    for lineno, line in enumerate(summary.splitlines(), start=1):
        label, sep, value = line.partition(":")
        label = " ".join(label.split())
        if sep and label and not label.startswith("*"):
            out.setdefault(label, (lineno, value.strip()))
    return out


def expected_lines(values: dict) -> dict[str, str]:
    """{summary label: detail-log key} of every figure the summary must print for a detail log's values."""
    out = {label: key for label, key in _FIXED.items() if key in values}
    percentile = values.get("effective_target_latency_percentile")
    if values.get("effective_scenario") in ("SingleStream", "MultiStream") and finite_number(percentile):
        # The headline figure: "90.0th percentile latency (ns)", per query for MultiStream.
        per_query = f"result_{percentile * 100:.2f}_percentile_per_query_latency_ns"
        plain = f"result_{percentile * 100:.2f}_percentile_latency_ns"
        key = per_query if per_query in values else plain
        if key in values:
            out[f"{percentile * 100:.1f}th percentile latency (ns)"] = key
    # Additional Stats: per query where LoadGen logged per-query latencies (MultiStream), else per sample.
    stats: dict[str, tuple[bool, str]] = {}
    for key in values:
        if match := _STATS.match(key):
            label = f"{match[1].capitalize()} latency (ns)"
        elif match := _PERCENTILE.match(key):
            label = f"{match[1]} percentile latency (ns)"
        else:
            continue
        per_query = match[2] is not None
        if label not in stats or per_query:
            stats[label] = (per_query, key)
    return out | {label: key for label, (_, key) in stats.items()}


def _same(printed: str, logged: Any) -> bool:
    """A printed summary value says what the logged one does (within the printing's rounding)."""
    if isinstance(logged, bool):
        return _YES_NO.get(printed) is logged
    if finite_number(logged):
        try:
            number = float(printed)
        except ValueError:
            return False
        return math.isclose(number, logged, rel_tol=_PRINTED_RTOL, abs_tol=_PRINTED_ATOL)
    return printed == str(logged)


@check("INF018", "summary-figures-mismatch", area="inference")
def summary_figures_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a figure of a performance run's mlperf_log_summary.txt differs from the detail log beside it,
    or is missing where the detail log holds it: the scenario and mode, the result (samples per second,
    Server's completed and scheduled rate, the stream scenarios' percentile latency), the latency
    statistics (min, max, mean, percentiles, in ns), SingleStream's QPS, and the Yes/No of "Min duration
    satisfied", "Min queries satisfied", "Performance constraints satisfied" and "Early stopping
    satisfied". Numbers are equal within the summary's rounding. The verdict is INF007's.
    Why: people read the summary, the checker reads the detail log; both come from one LoadGen run, so a
    figure that differs was edited (a doubled samples per second reads well in a review).
    Bad: "Samples per second: 655774" in run_1/mlperf_log_summary.txt, result_samples_per_second 327887
    in run_1/mlperf_log_detail.txt.
    Fix: package LoadGen's files exactly as it wrote them.
    """
    for run in sub.inferences:
        if run.mode != L.PERFORMANCE:
            continue  # an accuracy run's summary prints no figures
        for repeat in run.repeats:
            if repeat.summary is None or repeat.detail is None:
                continue  # STR001 / STR003
            values = repeat.detail.values()
            printed = summary_lines(repeat.summary)
            for label, key in expected_lines(values).items():
                if label not in printed:
                    yield Finding.at(
                        repeat.summary_path,
                        f'no "{label}" line where {repeat.detail_path} logs {key}',
                        expected=values[key],
                        hint="package LoadGen's files exactly as it wrote them",
                    )
                elif not _same(printed[label][1], values[key]):
                    yield Finding.at(
                        repeat.summary_path,
                        f'"{label}" differs from {key} in {repeat.detail_path}',
                        line=printed[label][0],
                        found=printed[label][1],
                        expected=values[key],
                        hint="package LoadGen's files exactly as it wrote them",
                    )
