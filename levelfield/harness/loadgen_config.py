"""Effective LoadGen settings of one run: rules + the round's seeds + the user's overrides.

    from levelfield.harness.loadgen_config import effective_settings, test_settings
    eff = effective_settings(suite, task, "smoke", "server", "performance", user_conf=Path("user.yaml"))
    sizing.size_settings(eff, costs)     # what the system under test needs (runner.py measures it)
    settings = test_settings(eff)        # an lg.TestSettings, built only here

`effective_settings` returns a plain dict in levelfield's names and units (what
`settings.json` holds, so a reader sees exactly what was asked of LoadGen); the
sizes LoadGen needs from the system under test (expected latency, expected QPS,
Server's target and batch cap) are added by `sizing.py` before the run;
`test_settings` is the only place those names are mapped onto LoadGen's fields.
The user-settings file (`rules/schemas/user-settings.schema.json`) is checked
before anything runs, so a misspelt key fails in a second, not after the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError
from levelfield.ground.loadgen_names import MODE_NAMES, SCENARIO_NAMES

if TYPE_CHECKING:  # annotations only: LoadGen is imported where a run needs it
    import mlperf_loadgen as lg

    from levelfield.rules.loader import Suite, Task

# LoadGen's Offline query holds offline_expected_qps x min_duration_s x 1.1 samples (its fixed 10%
# slack; checked against 6.0.17's effective_samples_per_query).
LOADGEN_OFFLINE_SLACK = 1.1
# Server batches leave as soon as the worker is free, holding what has arrived (sizing.py caps
# their size); a user may make the worker wait up to batch_timeout_us for more.
DEFAULT_SERVER_BATCH_TIMEOUT_US = 0

_NS_PER_MS = 1_000_000


def read_user_conf(path: Path | None, scenario: str) -> dict:
    """The overrides for `scenario` from a user-settings file ('*' first, the scenario's own keys win)."""
    if path is None:
        return {}
    from levelfield.ground.validation import load_document, validate

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: user settings file not found")
    conf = load_document(path)
    validate(conf, "user-settings", path)
    return {**conf.get("*", {}), **conf.get(scenario, {})}


def effective_settings(
    suite: Suite,
    task: Task,
    profile: str,
    scenario: str,
    mode: str,
    *,
    user_conf: Path | None = None,
    dataset_samples: int,
) -> dict:
    """Every setting of the run in levelfield's names (units in the names); see the module docstring."""
    eff = {
        "task": task.id,
        "profile": profile,
        "scenario": scenario,
        "mode": mode,
        "rules_version": suite.version,
        "submittable": bool(suite.profiles[profile]["submittable"]),
    }
    eff.update(task.loadgen_settings(profile, scenario))
    overrides = read_user_conf(user_conf, scenario)
    eff.update(overrides)
    eff["user_overrides"] = sorted(overrides)
    eff.update({name: int(value) for name, value in suite.loadgen_seeds.items()})
    # LoadGen's TestSettings field names, set as the rules fix them (INF015 checks the logged values).
    eff["query_stream"] = dict(suite.loadgen_query_stream)
    eff["accuracy_log"] = dict(suite.loadgen_accuracy_log)  # INF019
    # The QSL covers the eval samples the trainer scores for this profile (smoke: the first n),
    # so the runner's accuracy and the trainer's eval accuracy are computed over the same rows.
    eff["dataset_samples"] = dataset_samples
    wanted = int(eff.get("performance_sample_count", task.inference["performance_sample_count"]))
    eff["performance_sample_count"] = min(wanted, dataset_samples)
    eff.setdefault("max_duration_ms", 0)  # 0: LoadGen's "no maximum"
    eff.setdefault("max_query_count", 0)
    if scenario == "server":
        eff.setdefault("batch_timeout_us", DEFAULT_SERVER_BATCH_TIMEOUT_US)
    if scenario == "offline":
        eff["min_query_count"] = 1  # Offline is one query; its size comes from expected_qps
    return eff


def test_settings(eff: dict) -> lg.TestSettings:
    """An lg.TestSettings from effective settings (the one mapping onto LoadGen's field names)."""
    import mlperf_loadgen as lg

    s = lg.TestSettings()
    scenario = eff["scenario"]
    s.scenario = getattr(lg.TestScenario, SCENARIO_NAMES[scenario])
    s.mode = getattr(lg.TestMode, MODE_NAMES[eff["mode"]])
    for name in (
        "min_duration_ms",
        "max_duration_ms",
        "min_query_count",
        "max_query_count",
        "qsl_rng_seed",
        "sample_index_rng_seed",
        "schedule_rng_seed",
    ):
        setattr(s, name, int(eff[name]))
    s.performance_sample_count_override = int(eff["performance_sample_count"])
    for block in ("query_stream", "accuracy_log"):  # TestSettings field names, as the rules fix them
        for name, value in eff.get(block, {}).items():
            setattr(s, name, value)
    if scenario == "singlestream":
        s.single_stream_target_latency_percentile = float(eff["latency_percentile"])
        if "expected_latency_ms" in eff:
            s.single_stream_expected_latency_ns = max(1, int(eff["expected_latency_ms"] * _NS_PER_MS))
    elif scenario == "multistream":
        s.multi_stream_samples_per_query = int(eff["samples_per_query"])
        s.multi_stream_target_latency_percentile = float(eff["latency_percentile"])
        if "expected_latency_ms" in eff:
            s.multi_stream_expected_latency_ns = max(1, int(eff["expected_latency_ms"] * _NS_PER_MS))
    elif scenario == "server":
        s.server_target_qps = float(eff["target_qps"])
        s.server_target_latency_ns = int(eff["latency_bound_ms"] * _NS_PER_MS)
        s.server_target_latency_percentile = float(eff["latency_percentile"])
    else:
        s.offline_expected_qps = float(eff["expected_qps"])
    return s
