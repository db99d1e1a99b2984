"""The scenario metric of a LoadGen run, from its detail log's records (never from the human summary).

    name, value = scenario_metric(detail.values(), "server", 0.99)   # ("samples_per_s", 1234.5)
    name, values = repeat_metrics(run.repeats, "offline", None)        # one value per run_<i>/ (None: absent)

Metric names carry their unit: SingleStream `p90_latency_ms`, MultiStream
`p99_latency_ms`, Server and Offline `samples_per_s`. The runner writes the
same names into result.json; the checker recomputes them from the detail log
of every repeat (INF006 compares them, and their mean and spread, with
result.json) and the leaderboard reads them through the same helpers.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol

from levelfield.ground.loadgen_names import STREAM_SCENARIOS
from levelfield.ground.parse import MllogFile

NS_PER_MS = 1e6
POWER_TIME_FORMAT = "%m-%d-%Y %H:%M:%S.%f"  # LoadGen's power_begin / power_end, e.g. "11-22-2026 08:54:28.409"


def percentile_latency_ns(values: dict, percentile: float | None, per_query: bool = False) -> Any:
    """The logged latency at `percentile` (None when it is not logged, or no percentile is known)."""
    if not isinstance(percentile, (int, float)) or isinstance(percentile, bool):
        return None  # a log without its percentile setting (a damaged or foreign file) has no such key
    # LoadGen names percentile keys like result_90.00_percentile_latency_ns.
    kind = "per_query_latency_ns" if per_query else "latency_ns"
    return values.get(f"result_{percentile * 100:.2f}_percentile_{kind}")


class LoggedRun(Protocol):
    """What repeat_metrics reads of a repeat (the checker's records.Repeat): its detail log, None when absent."""

    detail: MllogFile | None


def latency_name(percentile: float) -> str:
    return f"p{round(percentile * 100)}_latency_ms"


def scenario_metric(values: dict, scenario: str, percentile: float | None) -> tuple[str, float | None]:
    """(metric name with unit, value or None when the log lacks it)."""
    if scenario in STREAM_SCENARIOS:
        value_ns = None
        if scenario == "multistream":
            value_ns = percentile_latency_ns(values, percentile, per_query=True)
        if value_ns is None:
            value_ns = percentile_latency_ns(values, percentile)
        return latency_name(percentile), None if not _number(value_ns) else value_ns / NS_PER_MS
    key = "result_completed_samples_per_sec" if scenario == "server" else "result_samples_per_second"
    value = values.get(key)
    return "samples_per_s", value if _number(value) else None


def repeat_metrics(
    repeats: Iterable[LoggedRun], scenario: str, percentile: float | None
) -> tuple[str, list[float | None]]:
    """(metric name with unit, the metric of each repeat's detail log in order; None where it lacks one)."""
    name = scenario_metric({}, scenario, percentile)[0]
    values = [
        None if r.detail is None else scenario_metric(r.detail.values(), scenario, percentile)[1] for r in repeats
    ]
    return name, values


def achieved_duration_ms(values: dict) -> float | None:
    """Wall time of the timed part of the run, from LoadGen's power_begin/power_end stamps."""
    try:
        begin = datetime.strptime(values["power_begin"], POWER_TIME_FORMAT)
        end = datetime.strptime(values["power_end"], POWER_TIME_FORMAT)
    except (KeyError, TypeError, ValueError):
        return None
    return (end - begin).total_seconds() * 1000


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
