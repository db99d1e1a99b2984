"""settings.json against the records beside it: the file a reader opens must say what LoadGen was asked.

settings.json holds the run's effective settings in levelfield's names (the
runner writes it before LoadGen starts); every LoadGen run of the folder logs
the same settings as requested_* keys, and the counts of its sample library as
qsl_reported_* keys. A settings.json edited after the run (to look like the
submission profile, say) disagrees with the logs, which the checks of
settings.py hold to the rules. Only settings the runner fixes before the first
run are compared with the logs: the sizes it measures (expected QPS, Server's
target, expected latencies) may change between repeats. What no log records
is compared with its source: the task with the folder, the
rules version with the tree's, the profile's submittable flag and minimum
sample count with the rules, a performance run's repeats with its run_<i>/
folders.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from levelfield.checker.checks.settings import PERCENTILE_KEYS
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground.loadgen_names import MODE_NAMES, SCENARIO_NAMES
from levelfield.ground.metrics import NS_PER_MS
from levelfield.ground.parse import finite_number, same_value

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import InferenceRun, Submission

# settings.json key -> (the requested_* key LoadGen logs it as, the logged value settings.json's implies)
_SAME = {
    "min_duration_ms": "min_duration_ms",
    "min_query_count": "min_query_count",
    "max_duration_ms": "max_duration_ms",
    "max_query_count": "max_query_count",
    "qsl_rng_seed": "qsl_rng_seed",
    "sample_index_rng_seed": "sample_index_rng_seed",
    "schedule_rng_seed": "schedule_rng_seed",
    "performance_sample_count": "performance_sample_count_override",
}
# settings.json key -> the key LoadGen logs the sample library's count under (no requested_ prefix)
_QSL = {"dataset_samples": "qsl_reported_total_count", "performance_sample_count": "qsl_reported_performance_count"}
# A float setting against its logged value: equal within the rounding of a unit conversion (ms -> ns).
_ROUNDING = 1e-9


def expected_logs(settings: dict) -> list[tuple[str, str, object]]:
    """(settings.json key, requested_* key, the value LoadGen must have logged, in its units) for every
    setting of `settings` that the runner fixes before LoadGen starts."""
    scenario, mode = settings.get("scenario"), settings.get("mode")
    scenario = scenario if isinstance(scenario, str) else None  # anything else: STR003 / INF009's to report
    out = [(key, logged, settings[key]) for key, logged in _SAME.items() if key in settings]
    if scenario is not None:
        out.append(("scenario", "scenario", SCENARIO_NAMES.get(scenario, scenario)))
    if isinstance(mode, str):
        out.append(("mode", "test_mode", MODE_NAMES.get(mode, mode)))
    if scenario in PERCENTILE_KEYS and "latency_percentile" in settings:
        out.append(("latency_percentile", PERCENTILE_KEYS[scenario], settings["latency_percentile"]))
    if scenario == "server" and finite_number(settings.get("latency_bound_ms")):
        out.append(("latency_bound_ms", "server_target_latency_ns", settings["latency_bound_ms"] * NS_PER_MS))
    if scenario == "multistream" and "samples_per_query" in settings:
        out.append(("samples_per_query", "multi_stream_samples_per_query", settings["samples_per_query"]))
    for block in ("query_stream", "accuracy_log"):  # written since rules 1.0 fixed them
        fixed = settings.get(block)
        if isinstance(fixed, dict):
            out += [(f"{block}.{key}", key, value) for key, value in fixed.items() if isinstance(key, str)]
    return [(key, f"requested_{logged}", want) for key, logged, want in out] + [
        (key, logged, settings[key]) for key, logged in _QSL.items() if key in settings
    ]


def expected_records(run: InferenceRun, ctx: Context) -> list[tuple[str, object, str]]:
    """(settings.json key, the value it must hold, where that value comes from) for the settings no
    LoadGen log records."""
    out = [
        ("task", run.task, "the folder"),  # scenario and mode: the logs record them (INF009 holds them to the folder)
        ("rules_version", ctx.suite.version, "the rules the tree declares"),
        ("profile", ctx.profile, "the profile the tree is checked by"),
        ("submittable", bool(ctx.suite.profiles[ctx.profile]["submittable"]), f"rules profile {ctx.profile}"),
    ]
    rules = ctx.suite.task(run.task).loadgen_settings(ctx.profile, run.scenario)
    if "min_sample_count" in rules:
        out.append(("min_sample_count", rules["min_sample_count"], f"rules profile {ctx.profile}"))
    if run.mode == L.PERFORMANCE:
        out.append(("repeats", len(run.repeats), "the run_<i>/ folders"))
    return out


@check("INF016", "settings-file-mismatch", area="inference")
def settings_file_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a setting in a run folder's settings.json differs from the record it must agree with:
    what the folder's LoadGen runs logged in their detail logs (scenario, mode, run lengths and caps,
    LoadGen's seeds, the sample counts, the latency percentile and bound, MultiStream's samples per
    query, the query stream and accuracy-log sampling), or, for what no log records, the folder (task), the
    tree's rules version, the checked profile (its name, submittable flag and minimum sample count)
    and a performance run's run_<i>/ folders (repeats).
    Why: settings.json is what a reader (and the leaderboard) takes as the run's settings; one edited
    after the run can claim the submission profile's settings for a run made with others.
    Bad: settings.json says min_duration_ms 60000, run_1/mlperf_log_detail.txt logs requested_min_duration_ms 500.
    Fix: never edit settings.json; package the run folder as `levelfield infer` wrote it.
    """
    for run in sub.inferences:
        settings = run.settings.data if run.settings is not None else None
        if not isinstance(settings, dict):
            continue  # STR001 / STR003
        for key, want, source in expected_records(run, ctx):
            if key in settings and not same_value(settings[key], want, 0.0):  # a missing key is STR010's
                yield Finding.at(
                    run.settings.path,
                    f"{key} differs from {source}",
                    found=repr(settings[key]),
                    expected=repr(want),
                    hint="package the run folder as levelfield infer wrote it; never edit settings.json",
                )
        expected = expected_logs(settings)
        for loadgen in run.loadgen_runs():
            if loadgen.detail is None:
                continue  # STR001
            values = loadgen.detail.values()
            for key, logged, want in expected:
                if logged in values and not same_value(values[logged], want, _ROUNDING):
                    line = loadgen.detail.last(logged)
                    yield Finding.at(
                        run.settings.path,
                        f"{key} says what {loadgen.detail_path} does not: {logged} {want!r}",
                        found=values[logged] if line is None else f"{values[logged]!r} (line {line.lineno})",
                        expected=want,
                        hint="package the run folder as levelfield infer wrote it; never edit settings.json",
                    )
