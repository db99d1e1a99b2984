"""result.json of a LoadGen run: per-repeat figures from each detail log, and their spread.

    entry = run_entry(outcome, "server", 0.99, "6.0.17")      # one timed run: metric, validity, reasons
    fields = performance_fields([entry, ...], "server")       # the result: every value, mean, stdev, 95% CI

The metric of each run is what LoadGen logged (loadgen_results.scenario_result),
named with its unit (`p90_latency_ms`, `p99_latency_ms`, `samples_per_s`). The
result's value under that name is the mean over the repeats; `statistics`
holds n, mean, stdev and the 95% CI of the mean (levelfield/ground/stats.py, the same
code the trainer summary and the leaderboard use). A result is VALID only when
every repeat is: one INVALID run means the settings did not hold on this system.
"""

from __future__ import annotations

from levelfield.ground.stats import spread
from levelfield.harness.loadgen_results import scenario_result
from levelfield.harness.session import LoadGenOutcome


def run_entry(
    outcome: LoadGenOutcome, index: int | None, scenario: str, percentile: float | None, expected_version: str
) -> dict:
    """One LoadGen run's figures; `index` None for an accuracy run (no repeats)."""
    entry = scenario_result(outcome.records, outcome.errors, scenario, percentile)
    version = entry["loadgen_version"]
    if version and not str(version).startswith(expected_version + " "):
        # Results from another LoadGen are not comparable: the run is invalid whatever LoadGen itself says.
        entry["invalid_reasons"].append(f"LoadGen {version}, the rules expect {expected_version}")
        entry["valid"] = False
    entry["loadgen_run_s"] = outcome.run_s
    if index is not None:
        entry = {"run": index, "folder": outcome.folder.name, **entry}
    return entry


def metric_name(entry: dict) -> str:
    """The metric key of a run entry (the one whose name carries a unit)."""
    return next(k for k in entry if k.endswith(("_latency_ms", "samples_per_s")))


def performance_fields(entries: list[dict]) -> dict:
    """The repeats of one result: each run, the mean under the metric's name, spread, overall validity."""
    name = metric_name(entries[0])
    values = [e[name] for e in entries]
    known = [v for v in values if isinstance(v, (int, float))]
    reasons = [f"run {e['run']}: {reason}" for e in entries for reason in e["invalid_reasons"]]
    valid = all(e["valid"] for e in entries) and len(known) == len(values)
    return {
        "metric": name,
        name: spread(known)["mean"] if len(known) == len(values) else None,
        "statistics": spread(known),
        "repeats": len(entries),
        "runs": entries,
        "valid": valid,
        "result_validity": "VALID" if valid else "INVALID",
        "invalid_reasons": reasons,
        "loadgen_version": entries[0]["loadgen_version"],
        "loadgen_errors": sum(e["loadgen_errors"] for e in entries),
        "query_count": min((e["query_count"] for e in entries if isinstance(e["query_count"], int)), default=None),
        "loadgen_run_s": sum(e["loadgen_run_s"] for e in entries),
    }
