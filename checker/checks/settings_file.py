"""settings.json against the detail logs beside it: the file a reader opens must say what LoadGen was asked.

settings.json holds the run's effective settings in levelfield's names (the
runner writes it before LoadGen starts); every LoadGen run of the folder logs
the same settings as requested_* keys. A settings.json edited after the run
(to look like the submission profile, say) disagrees with the logs, which the
checks of settings.py hold to the rules. Only settings the runner fixes before
the first run are compared: the sizes it measures (expected QPS, Server's
target, expected latencies) may change between repeats.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from levelfield.checker.checks.settings import PERCENTILE_KEYS
from levelfield.checker.findings import Finding, check
from levelfield.ground.loadgen_names import MODE_NAMES, SCENARIO_NAMES
from levelfield.ground.metrics import NS_PER_MS
from levelfield.ground.parse import finite_number, same_value

if TYPE_CHECKING:
    from levelfield.checker.engine import Context
    from levelfield.checker.records import Submission

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
    stream = settings.get("query_stream")
    if isinstance(stream, dict):  # written since rules 1.0 fixed the query stream
        out += [(f"query_stream.{key}", key, value) for key, value in stream.items() if isinstance(key, str)]
    return [(key, f"requested_{logged}", want) for key, logged, want in out]


@check("INF016", "settings-file-mismatch", area="inference")
def settings_file_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a setting in a run folder's settings.json (scenario, mode, run lengths and caps, LoadGen's
    seeds, the sample count, the latency percentile and bound, MultiStream's samples per query, the
    query stream) differs from what the folder's LoadGen runs logged as requested_* in their detail logs.
    Why: settings.json is what a reader (and the leaderboard) takes as the run's settings; one edited
    after the run can claim the submission profile's settings for a run made with others.
    Bad: settings.json says min_duration_ms 60000, run_1/mlperf_log_detail.txt logs requested_min_duration_ms 500.
    Fix: never edit settings.json; package the run folder as `levelfield infer` wrote it.
    """
    for run in sub.inferences:
        settings = run.settings.data if run.settings is not None else None
        if not isinstance(settings, dict):
            continue  # STR001 / STR003
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
