"""Read LoadGen's mlperf_log_detail.txt as JSON records (never regex on the human summary).

    from levelfield.harness.loadgen_results import read_detail, scenario_result
    records = read_detail(Path("out/mlperf_log_detail.txt"))    # {key: value}, last one wins
    result = scenario_result(records, "singlestream", 0.90)      # {"p90_latency_ms": ..., "valid": ...}

Each line of the detail log is `:::MLLOG {json}`; the JSON carries `key`,
`value` and `metadata.is_error`. The metric is named with its unit
(`p90_latency_ms`, `p99_latency_ms`, `samples_per_s`) and LoadGen's own
verdict comes from `result_validity` plus the reasons it states.
"""

from __future__ import annotations

import json
from pathlib import Path

PREFIX = ":::MLLOG "
_NS_PER_MS = 1e6


def read_detail(path: Path) -> tuple[dict, list[str]]:
    """({key: value} of every MLLOG line, [messages of lines flagged is_error]) of a detail log."""
    records, errors = {}, []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith(PREFIX):
            continue
        try:
            entry = json.loads(line[len(PREFIX) :])
        except json.JSONDecodeError:
            continue  # a line cut short by a crash; the missing keys are reported below
        records[entry.get("key")] = entry.get("value")
        if (entry.get("metadata") or {}).get("is_error"):
            errors.append(f"{entry.get('key')}: {entry.get('value')}")
    return records, errors


def _percentile_key(records: dict, percentile: float, suffix: str) -> float | None:
    # LoadGen names percentile keys like result_90.00_percentile_latency_ns.
    return records.get(f"result_{percentile * 100:.2f}_percentile_{suffix}")


def scenario_result(records: dict, errors: list[str], scenario: str, percentile: float | None) -> dict:
    """The scenario's metric (unit in the name), LoadGen's validity and its reasons."""
    out: dict = {}
    if scenario == "singlestream":
        value_ns = _percentile_key(records, percentile, "latency_ns")
        out[f"p{round(percentile * 100)}_latency_ms"] = None if value_ns is None else value_ns / _NS_PER_MS
    elif scenario == "multistream":
        value_ns = _percentile_key(records, percentile, "per_query_latency_ns")
        if value_ns is None:
            value_ns = _percentile_key(records, percentile, "latency_ns")
        out[f"p{round(percentile * 100)}_latency_ms"] = None if value_ns is None else value_ns / _NS_PER_MS
    elif scenario == "server":
        out["samples_per_s"] = records.get("result_completed_samples_per_sec")
        value_ns = _percentile_key(records, percentile, "latency_ns")
        out[f"p{round(percentile * 100)}_latency_ms"] = None if value_ns is None else value_ns / _NS_PER_MS
    else:
        out["samples_per_s"] = records.get("result_samples_per_second")
    validity = records.get("result_validity")
    reasons = []
    if records.get("result_min_duration_met") is False:
        reasons.append("min duration not met")
    if records.get("result_min_queries_met") is False:
        reasons.append("min query count not met")
    if records.get("early_stopping_met") is False:
        reasons.append("early stopping not met")
    if records.get("result_perf_constraints_met") is False:
        reasons.append("latency constraint not met")
    for key in ("result_invalid_reason", "early_stopping_result"):
        text = (records.get(key) or "").strip()
        if text and validity != "VALID":
            reasons.append(text)
    reasons.extend(errors)
    if validity is None:
        reasons.append("no result_validity line in mlperf_log_detail.txt")
    out.update(
        {
            "valid": validity == "VALID",
            "result_validity": validity,
            "invalid_reasons": reasons,
            "loadgen_version": records.get("loadgen_version"),
            "query_count": records.get("result_query_count"),
            "loadgen_errors": len(errors),
        }
    )
    return out
