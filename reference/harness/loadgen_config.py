"""Effective LoadGen settings of one run: rules + the round's seeds + the user's overrides.

    from levelfield.reference.harness.loadgen_config import effective_settings, test_settings
    eff = effective_settings(suite, task, "smoke", "server", "performance", user_conf=Path("user.yaml"))
    settings = test_settings(eff)        # an lg.TestSettings, built only here

`effective_settings` returns a plain dict in levelfield's names and units (what
`settings.json` holds, so a reader sees exactly what was asked of LoadGen);
`test_settings` is the only place those names are mapped onto LoadGen's fields.
The user-settings file (`rules/schemas/user-settings.schema.json`) is checked
before anything runs, so a misspelt key fails in a second, not after the run.
"""

from __future__ import annotations

from pathlib import Path

from levelfield.errors import UserError

# Server SUT batching defaults: a batch leaves when it holds MAX_BATCH_SIZE
# samples or its oldest sample has waited BATCH_TIMEOUT_US. 16 rows and 500 µs
# keep the added queueing delay a small fraction of the 10 ms latency bound
# while letting the worker absorb Poisson bursts in one predict call.
DEFAULT_SERVER_MAX_BATCH_SIZE = 16
DEFAULT_SERVER_BATCH_TIMEOUT_US = 500
# LoadGen's Offline query holds offline_expected_qps x min_duration_s x 1.1
# samples (its fixed 10% slack; checked against 6.0.17's effective_samples_per_query).
LOADGEN_OFFLINE_SLACK = 1.1
# An Offline query sized for less than the model's real throughput ends before
# min_duration (INVALID: "Increase expected QPS"). The runner then runs once more
# with expected_qps = the samples/s LoadGen just measured x this headroom, which
# covers a first run slowed by its small query or a busy moment; the cost is a run
# up to ~1.5x min_duration (and that many samples in memory). A tiny first query
# underestimates a fast model (LoadGen's fixed cost per query dominates it), so the
# runner sizes again, at most MAX_OFFLINE_RESIZES times, while the run is too short.
OFFLINE_RESIZE_HEADROOM = 1.5
MAX_OFFLINE_RESIZES = 3

SCENARIO_NAMES = {"singlestream": "SingleStream", "multistream": "MultiStream",
                  "server": "Server", "offline": "Offline"}
MODE_NAMES = {"performance": "PerformanceOnly", "accuracy": "AccuracyOnly"}
_NS_PER_MS = 1_000_000


def read_user_conf(path: Path | None, scenario: str) -> dict:
    """The overrides for `scenario` from a user-settings file ('*' first, the scenario's own keys win)."""
    if path is None:
        return {}
    from levelfield.rules.validation import load_document, validate

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: user settings file not found")
    conf = load_document(path)
    validate(conf, "user-settings", path)
    return {**conf.get("*", {}), **conf.get(scenario, {})}


def effective_settings(suite, task, profile: str, scenario: str, mode: str, *,
                       user_conf: Path | None = None, dataset_samples: int) -> dict:
    """Every setting of the run in levelfield's names (units in the names); see the module docstring."""
    eff = {"task": task.id, "profile": profile, "scenario": scenario, "mode": mode,
           "rules_version": suite.version, "submittable": bool(suite.profiles[profile]["submittable"])}
    eff.update(task.loadgen_settings(profile, scenario))
    overrides = read_user_conf(user_conf, scenario)
    eff.update(overrides)
    eff["user_overrides"] = sorted(overrides)
    eff.update({name: int(value) for name, value in suite.loadgen_seeds.items()})
    # The QSL covers the eval samples the trainer scores for this profile (smoke: the first n),
    # so the runner's accuracy and the trainer's eval accuracy are computed over the same rows.
    eff["dataset_samples"] = dataset_samples
    wanted = int(eff.get("performance_sample_count", task.inference["performance_sample_count"]))
    eff["performance_sample_count"] = min(wanted, dataset_samples)
    eff.setdefault("max_duration_ms", 0)       # 0: LoadGen's "no maximum"
    eff.setdefault("max_query_count", 0)
    if scenario == "server":
        eff.setdefault("max_batch_size", DEFAULT_SERVER_MAX_BATCH_SIZE)
        eff.setdefault("batch_timeout_us", DEFAULT_SERVER_BATCH_TIMEOUT_US)
    if scenario == "offline":
        _offline_query_size(eff)
    return eff


def _offline_query_size(eff: dict) -> None:
    """Make LoadGen's single Offline query hold at least `min_sample_count` samples.

    LoadGen sizes the one Offline query as offline_expected_qps x min_duration_s
    x 1.1 (and never below min_query_count), so we raise the expected QPS until
    that product reaches min_sample_count; a larger user `expected_qps` wins.
    """
    min_samples = int(eff.get("min_sample_count", 1))
    duration_s = max(eff.get("min_duration_ms", 0), 1) / 1000
    needed_qps = min_samples / (duration_s * LOADGEN_OFFLINE_SLACK)
    eff["expected_qps"] = max(float(eff.get("expected_qps", 0)), needed_qps)
    eff["min_query_count"] = 1


def resize_offline_query(eff: dict, records: dict) -> dict | None:
    """After an Offline performance run that ended before its minimum duration, raise eff's
    expected_qps to the measured samples/s x OFFLINE_RESIZE_HEADROOM; returns what was changed
    (for result.json), or None when the run was long enough or measured nothing."""
    measured = records.get("result_samples_per_second")
    if records.get("result_min_duration_met") is not False or not isinstance(measured, (int, float)) or measured <= 0:
        return None
    first = float(eff["expected_qps"])
    eff["expected_qps"] = max(first, float(measured) * OFFLINE_RESIZE_HEADROOM)
    return {"first_expected_qps": first, "first_samples_per_s": float(measured),
            "expected_qps": eff["expected_qps"]}


def test_settings(eff: dict):
    """An lg.TestSettings from effective settings (the one mapping onto LoadGen's field names)."""
    import mlperf_loadgen as lg

    s = lg.TestSettings()
    scenario = eff["scenario"]
    s.scenario = getattr(lg.TestScenario, SCENARIO_NAMES[scenario])
    s.mode = getattr(lg.TestMode, MODE_NAMES[eff["mode"]])
    for name in ("min_duration_ms", "max_duration_ms", "min_query_count", "max_query_count",
                 "qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed"):
        setattr(s, name, int(eff[name]))
    s.performance_sample_count_override = int(eff["performance_sample_count"])
    if scenario == "singlestream":
        s.single_stream_target_latency_percentile = float(eff["latency_percentile"])
        if "expected_latency_ms" in eff:
            s.single_stream_expected_latency_ns = int(eff["expected_latency_ms"] * _NS_PER_MS)
    elif scenario == "multistream":
        s.multi_stream_samples_per_query = int(eff["samples_per_query"])
        s.multi_stream_target_latency_percentile = float(eff["latency_percentile"])
        if "expected_latency_ms" in eff:
            s.multi_stream_expected_latency_ns = int(eff["expected_latency_ms"] * _NS_PER_MS)
    elif scenario == "server":
        s.server_target_qps = float(eff["target_qps"])
        s.server_target_latency_ns = int(eff["latency_bound_ms"] * _NS_PER_MS)
        s.server_target_latency_percentile = float(eff["latency_percentile"])
    else:
        s.offline_expected_qps = float(eff["expected_qps"])
    return s
