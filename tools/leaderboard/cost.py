"""What a result cost, for the leaderboard's rows: memory, CPU use, the host's load, energy, price.

    cost_of_training_run(log)                       # one run's figures from its levelfield_* lines
    training_cost(runs, threshold)                  # the row's: peaks as maxima, shares and energies as means
    scenario_cost(performance, threshold)           # an inference scenario's, from result.json's repeats

Every figure is one the checker has just held to its domain and its result (TRN017, STR010, REP005,
SYS010); energy that no meter measured ("not measured") is left out, never estimated, and CPU (RAPL) and
GPU (NVML) energy stay apart. A result is `host_loaded` when some run's other processes used more of the
host's CPU time than the rules' checks.host_load_max_others_share (SYS009 warns of the same run); None
under rules without that threshold, or when no run recorded its load.
"""

from __future__ import annotations

import math
from typing import Any

from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile
from levelfield.ground.stats import mean

SAMPLES_PER_ENERGY_FIGURE = 1000  # energy per 1,000 samples: joules a reader can compare across batch sizes


def _number(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _mean(values: list) -> float | None:
    found = [v for v in values if v is not None]
    return mean(found) if found else None


def _max(values: list) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def loaded(others_max: float | None, threshold: float | None) -> bool | None:
    """Whether the busiest run's other processes exceeded the rules' threshold; None when not judged."""
    if threshold is None or others_max is None:
        return None
    return others_max > threshold


def cost_of_training_run(log: MllogFile) -> dict:
    return {
        "peak_tree_memory_mib": _number(log.value(LK.PEAK_TREE_RSS_MIB)),
        "process_cpu_share": _number(log.value(LK.PROCESS_CPU_SHARE)),
        "others_cpu_share": _number(log.value(LK.OTHERS_CPU_SHARE)),
        "cpu_energy_j": _number(log.value(LK.CPU_ENERGY_J)),
        "price_usd": _number(log.value(LK.PRICE_USD)),
    }


def training_cost(runs: list[dict], threshold: float | None) -> dict:
    """A training row's cost figures from its runs' (run_record) figures."""
    others = _max([r["others_cpu_share"] for r in runs])
    return {
        "peak_tree_memory_mib": _max([r["peak_tree_memory_mib"] for r in runs]),
        "process_cpu_share": _mean([r["process_cpu_share"] for r in runs]),
        "others_cpu_share_max": others,
        "host_loaded": loaded(others, threshold),
        "cpu_energy_per_run_j": _mean([r["cpu_energy_j"] for r in runs]),
        "price_per_run_usd": _mean([r["price_usd"] for r in runs]),
    }


def _per_thousand(energy: Any, samples: Any) -> float | None:
    energy, samples = _number(energy), _number(samples)
    if energy is None or not samples:
        return None
    return energy / samples * SAMPLES_PER_ENERGY_FIGURE


def scenario_cost(result: Any, threshold: float | None) -> dict:
    """An inference scenario's cost figures from its performance result.json (`runs[i].resources`)."""
    entries = result.get("runs") if isinstance(result, dict) else None
    records = [e["resources"] for e in entries or [] if isinstance(e, dict) and isinstance(e.get("resources"), dict)]
    others = _max([_number(r.get("others_cpu_share")) for r in records])
    return {
        "peak_tree_memory_mib": _max([_number(r.get("peak_tree_rss_mib")) for r in records]),
        "process_cpu_share": _mean([_number(r.get("process_cpu_share")) for r in records]),
        "others_cpu_share_max": others,
        "host_loaded": loaded(others, threshold),
        "cpu_energy_per_1000_samples_j": _mean(
            [_per_thousand(r.get("cpu_energy_j"), r.get("samples")) for r in records]
        ),
        "gpu_energy_per_1000_samples_j": _mean(
            [_per_thousand(r.get("gpu_energy_j"), r.get("samples")) for r in records]
        ),
        "price_usd_per_million_samples": _mean([_number(r.get("price_usd_per_million_samples")) for r in records]),
    }


def row_load(scenarios: dict) -> dict:
    """An inference row's load over its scenarios: the busiest repeat's share, and whether any was loaded."""
    others = _max([e.get("others_cpu_share_max") for e in scenarios.values()])
    marks = [e.get("host_loaded") for e in scenarios.values() if e.get("host_loaded") is not None]
    return {
        "peak_tree_memory_mib": _max([e.get("peak_tree_memory_mib") for e in scenarios.values()]),
        "others_cpu_share_max": others,
        "host_loaded": any(marks) if marks else None,
    }
