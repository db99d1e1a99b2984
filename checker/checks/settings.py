"""Inference settings checks: the settings LoadGen was asked for against the checked profile, one rule per code.

Every LoadGen run logs the settings it was given as requested_* keys in
mlperf_log_detail.txt, and the settings it then ran with as effective_* keys.
Each check below compares one rule's keys, both kinds, with the rules' values
for the checked profile (the submission profile unless `levelfield check
--profile` names another) and points at the key's line: an edited requested_*
line does not hide the effective_* one beside it, nor the reverse.
They were one code, INF004, until it was split so that a finding names the
rule it breaks and `--ignore` can skip one rule (findings.RETIRED).

Each `*_differences` function has the same signature and returns
(key, found, expected) for every requested setting that breaks its rule, so a
check is one line and tests can call a rule without a submission tree.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground.loadgen_names import MODE_NAMES, SCENARIO_NAMES
from levelfield.ground.metrics import NS_PER_MS
from levelfield.ground.parse import plain_int
from levelfield.ground.submission.records import InferenceRun, Submission

if TYPE_CHECKING:
    from levelfield.rules.loader import Suite

Difference = tuple[str, object, object]  # (requested_* or effective_* key, value found, value expected)


def _requested(values: dict, key: str, ok: Callable[[object], bool], expected: object) -> list[Difference]:
    found = values.get(f"requested_{key}")
    return [] if ok(found) else [(f"requested_{key}", found, expected)]


def _effective(values: dict, key: str, ok: Callable[[object], bool], expected: object) -> list[Difference]:
    found = values.get(f"effective_{key}")
    return [] if ok(found) else [(f"effective_{key}", found, expected)]


def _logged(values: dict, key: str, ok: Callable[[object], bool], expected: object) -> list[Difference]:
    """The setting under both of LoadGen's names (requested_<key>, effective_<key>)."""
    return _requested(values, key, ok, expected) + _effective(values, key, ok, expected)


def _close(found, want) -> bool:
    return isinstance(found, (int, float)) and not isinstance(found, bool) and math.isclose(found, want, rel_tol=1e-9)


def scenario_mode_differences(values: dict, rules: dict, suite: Suite, scenario: str, mode: str) -> list[Difference]:
    """The scenario and test mode LoadGen ran against the folder the run is filed under."""
    return _logged(values, "scenario", lambda v: v == SCENARIO_NAMES[scenario], SCENARIO_NAMES[scenario]) + _logged(
        values, "test_mode", lambda v: v == MODE_NAMES[mode], MODE_NAMES[mode]
    )


def seed_differences(values: dict, rules: dict, suite: Suite, scenario: str, mode: str) -> list[Difference]:
    """LoadGen's RNG seeds against the suite's fixed ones."""
    out = []
    for seed, want in suite.loadgen_seeds.items():
        out += _logged(values, seed, lambda v, w=want: plain_int(v) and v == w, want)
    return out


def run_length_differences(values: dict, rules: dict, suite: Suite, scenario: str, mode: str) -> list[Difference]:
    """A performance run's minimum duration and query count against the profile's (never below)."""
    if mode != "performance":
        return []  # an accuracy run answers every sample once, however long that takes
    out = []
    for key in ("min_duration_ms", "min_query_count"):
        out += _logged(values, key, lambda v, k=key: plain_int(v) and v >= rules[k], f">= {rules[key]}")
    return out


def sample_count_differences(values: dict, rules: dict, suite: Suite, scenario: str, mode: str) -> list[Difference]:
    """How many samples LoadGen loads and cycles through, against the task's performance_sample_count, and
    how many an accuracy run answers (every eval sample of the profile: no override)."""
    want = rules["performance_sample_count"]
    ok = lambda v: plain_int(v) and v == want  # noqa: E731 - one test, two keys
    everything = rules["accuracy_sample_count"]  # an accuracy run answers every sample of the profile's eval set
    return (
        _requested(values, "performance_sample_count_override", ok, want)
        + _effective(values, "performance_sample_count", ok, want)
        + _requested(values, "accuracy_sample_count_override", lambda v: plain_int(v) and v in (0, everything), 0)
        + _effective(values, "accuracy_sample_count", lambda v: plain_int(v) and v == everything, everything)
        + _loaded_set(values.get("loaded_qsl_set"), want, everything, exact=mode == "performance")
    )


def _loaded_set(loaded: object, want: int, total: int, *, exact: bool) -> list[Difference]:
    """The samples LoadGen loaded (loaded_qsl_set): indices of the eval set, `want` distinct ones in a
    performance run; an accuracy run loads the eval set in turns of at most `want`, and the log keeps the last."""
    if loaded is None:
        return []  # not logged
    # The common case in C-level passes instead of a call per index: every item an int (type() is exact:
    # not a bool), and the distinct ones all indices of the eval set.
    distinct_items = set(loaded) if isinstance(loaded, list) and set(map(type, loaded)) == {int} else None
    if distinct_items is not None and distinct_items <= _eval_indices(total):
        indices, distinct = loaded, len(distinct_items)
    else:
        indices = [i for i in loaded if plain_int(i) and 0 <= i < total] if isinstance(loaded, list) else []
        distinct = len(set(indices))  # MultiStream pads the set to whole queries by repeating samples
    size_ok = distinct == want if exact else 0 < distinct <= want
    if isinstance(loaded, list) and len(indices) == len(loaded) and size_ok:
        return []
    found = (
        f"{len(loaded)} entries, {len(set(indices))} distinct indices in [0, {total})"
        if isinstance(loaded, list)
        else f"a {type(loaded).__name__}"
    )
    size = f"{want}" if exact else f"at most {want}"
    return [("loaded_qsl_set", found, f"{size} distinct indices in [0, {total})")]


@functools.cache
def _eval_indices(total: int) -> frozenset[int]:
    """{0, ..., total - 1}: the indices of an eval set of `total` samples."""
    return frozenset(range(total))


def samples_per_query_differences(
    values: dict, rules: dict, suite: Suite, scenario: str, mode: str
) -> list[Difference]:
    """MultiStream's samples per query against the scenario's."""
    if scenario != "multistream":
        return []
    want = rules["samples_per_query"]
    ok = lambda v: plain_int(v) and v == want  # noqa: E731 - one test, two keys
    return _requested(values, "multi_stream_samples_per_query", ok, want) + _effective(
        values, "samples_per_query", ok, want
    )


def accuracy_log_differences(values: dict, rules: dict, suite: Suite, scenario: str, mode: str) -> list[Difference]:
    """Which responses LoadGen also logs for accuracy during a run: its sampling settings against the rules'."""
    out = []
    for key, want in suite.loadgen_accuracy_log.items():
        out += _logged(values, key, lambda v, w=want: _close(v, w) and (plain_int(v) or not plain_int(w)), want)
    return out


# The requested_* key holding each scenario's latency percentile; Offline has no latency constraint.
PERCENTILE_KEYS = {
    "singlestream": "single_stream_target_latency_percentile",
    "multistream": "multi_stream_target_latency_percentile",
    "server": "server_target_latency_percentile",
}


def latency_differences(values: dict, rules: dict, suite: Suite, scenario: str, mode: str) -> list[Difference]:
    """The latency percentile and (Server) latency bound against the scenario's."""
    out = []
    if scenario in PERCENTILE_KEYS:
        want = rules["latency_percentile"]
        out += _requested(values, PERCENTILE_KEYS[scenario], lambda v: _close(v, want), want)
        out += _effective(values, "target_latency_percentile", lambda v: _close(v, want), want)
    if scenario == "server":
        bound_ns = rules["latency_bound_ms"] * NS_PER_MS
        out += _requested(values, "server_target_latency_ns", lambda v: _close(v, bound_ns), int(bound_ns))
        out += _effective(values, "target_latency_ns", lambda v: _close(v, bound_ns), int(bound_ns))
    return out


def query_stream_differences(values: dict, rules: dict, suite: Suite, scenario: str, mode: str) -> list[Difference]:
    """Which samples the queries carry: LoadGen's audit and permutation switches against the rules'."""
    out = []
    for key, want in suite.loadgen_query_stream.items():
        # bool is an int subclass: True must not pass for 1, nor 0 for False
        out += _logged(values, key, lambda v, w=want: type(v) is type(w) and v == w, want)
    return out


def profile_rules(ctx: Context, run: InferenceRun) -> dict:
    """The rules a run's requested settings are held to: the scenario's constraints, the checked
    profile's run lengths, the task's sample count (capped by its eval set) and its eval set's size."""
    task = ctx.task(run.task)
    return {
        **task.loadgen_settings(ctx.profile, run.scenario),
        "performance_sample_count": min(task.inference["performance_sample_count"], task.inference_samples),
        "accuracy_sample_count": task.inference_samples,
    }


def _findings(sub, ctx, differences, hint: str) -> Iterator[Finding]:
    for run in sub.inferences:
        for loadgen in run.loadgen_runs():
            if loadgen.detail is None:
                continue  # STR001
            values = loadgen.detail.values()
            for key, found, expected in differences(values, profile_rules(ctx, run), ctx.suite, run.scenario, run.mode):
                line = loadgen.detail.last(key)
                yield Finding.at(
                    loadgen.detail.path,
                    f"{key} breaks the rules' {ctx.profile} profile",
                    line=None if line is None else line.lineno,
                    found=found,
                    expected=expected,
                    hint=hint,
                )


_RERUN = "run `levelfield infer` with the profile checked; "


@check("INF009", "scenario-or-mode-mismatch", area="inference")
def scenario_or_mode_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the scenario or test mode LoadGen was asked for (requested_scenario, requested_test_mode)
    or the one it ran (effective_scenario, effective_test_mode) is not the one of the folder the run
    is filed under (<scenario>/<mode>/).
    Why: the folder decides which rules a run is judged by; an Offline run filed as Server, or an
    accuracy run filed as performance, would be scored against the wrong constraints.
    Bad: requested_scenario "Offline" under server/performance/.
    Fix: package the runs again with `levelfield package`; never move run folders by hand.
    """
    yield from _findings(
        sub,
        ctx,
        scenario_mode_differences,
        "file each run under the scenario and mode it ran (levelfield package does)",
    )


@check("INF010", "rng-seeds-changed", area="inference")
def rng_seeds_changed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a LoadGen RNG seed (requested_qsl_rng_seed, requested_sample_index_rng_seed,
    requested_schedule_rng_seed, and the effective_* seed LoadGen ran with) is not the suite's fixed
    value (rules/<version>/suite.yaml, loadgen_seeds).
    Why: the seeds decide which samples are loaded and in which order queries arrive; fixed seeds
    mean nobody can pick a lucky sample order or arrival schedule.
    Bad: requested_schedule_rng_seed 1 where the rules fix 1732050807568877293.
    Fix: remove any seed from --user-conf; the runner sets the rules' seeds.
    """
    yield from _findings(sub, ctx, seed_differences, _RERUN + "never set LoadGen's seeds in --user-conf")


@check("INF011", "run-length-below-profile", area="inference")
def run_length_below_profile(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a performance run asked LoadGen for a shorter minimum duration or fewer minimum queries
    (requested_min_duration_ms, requested_min_query_count, or their effective_* values) than the
    profile's run length. Both are one
    rule: LoadGen runs until both minima are met, so together they are how long a run is.
    Smoke- and demo-profile runs fail here. (INF003 measures what the run achieved.)
    Why: a short run hides warm-up, thermal and garbage-collection effects and gives LoadGen's early
    stopping too few queries; results are comparable only at the same length.
    Bad: requested_min_duration_ms 500 (the smoke profile) where the rules ask 60000.
    Fix: run `levelfield infer` with the submission profile; never lower the minima in --user-conf.
    """
    yield from _findings(sub, ctx, run_length_differences, _RERUN + "never lower the minima in --user-conf")


@check("INF012", "sample-count-changed", area="inference")
def sample_count_changed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the number of samples LoadGen loaded and cycled through (requested_performance_sample_count_override)
    or used (effective_performance_sample_count) is not the task's performance_sample_count (capped
    by the profile's eval set), loaded_qsl_set is not that many distinct indices of the eval set (at
    most that many in an accuracy run, which loads the set in turns), or an accuracy run did not
    answer every sample of the eval set (requested_accuracy_sample_count_override,
    effective_accuracy_sample_count).
    A rule of its own, not a run length: it sets the working set, not how long the run is.
    Why: a smaller working set fits a faster cache and repeats the same samples, so throughput rises
    without the system being any faster.
    Bad: requested_performance_sample_count_override 1024 where the rules ask 32768.
    Fix: remove performance_sample_count_override from --user-conf; the runner sets the rules' count.
    """
    yield from _findings(
        sub, ctx, sample_count_differences, _RERUN + "never set performance_sample_count_override in --user-conf"
    )


@check("INF013", "samples-per-query-changed", area="inference")
def samples_per_query_changed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a MultiStream run asked for another number of samples per query
    (requested_multi_stream_samples_per_query) or ran with another (effective_samples_per_query) than
    the scenario's samples_per_query.
    Why: MultiStream's latency is that of a whole query; fewer samples per query make each one cheaper,
    so the latency is not comparable.
    Bad: requested_multi_stream_samples_per_query 4 where the rules ask 8.
    Fix: remove samples_per_query from --user-conf; the runner sets the rules' value.
    """
    yield from _findings(sub, ctx, samples_per_query_differences, _RERUN + "never set samples_per_query in --user-conf")


@check("INF014", "latency-constraint-changed", area="inference")
def latency_constraint_changed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the latency constraint LoadGen was asked to judge is not the scenario's: another latency
    percentile (SingleStream, MultiStream, Server: requested_*_target_latency_percentile) or another
    latency bound (Server: requested_server_target_latency_ns), or ran with another
    (effective_target_latency_percentile, effective_target_latency_ns). Percentile and bound are one rule,
    "p-th percentile latency at most the bound", as the rules state it.
    Why: LoadGen's VALID verdict and the reported latency are judged at these values; a looser bound
    or a lower percentile makes an overloaded system look VALID.
    Bad: requested_server_target_latency_ns 200000000 (the demo's 200 ms) where the rules ask 10 ms.
    Fix: run `levelfield infer` with the submission profile; never set the latency targets in --user-conf.
    """
    yield from _findings(
        sub, ctx, latency_differences, _RERUN + "never set latency percentiles or bounds in --user-conf"
    )


@check("INF015", "query-stream-altered", area="inference")
def query_stream_altered(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: LoadGen was asked for, or ran with, another query stream than the rules fix
    (rules/<version>/suite.yaml, loadgen_query_stream): performance_issue_unique,
    performance_issue_same, performance_issue_same_index or sample_concatenate_permutation,
    requested_* or effective_*.
    Why: these are LoadGen's audit switches; with performance_issue_same every query carries the
    same sample, so a cache answers instead of the system and throughput rises for nothing.
    Bad: effective_performance_issue_same true.
    Fix: run `levelfield infer` as shipped; the runner sets these from the rules and no user setting
    changes them.
    """
    yield from _findings(sub, ctx, query_stream_differences, _RERUN + "never change LoadGen's query stream")


@check("INF019", "accuracy-log-sampling-changed", area="inference")
def accuracy_log_sampling_changed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: LoadGen was asked for, or ran with, another accuracy-log sampling than the rules fix
    (rules/<version>/suite.yaml, loadgen_accuracy_log): accuracy_log_rng_seed,
    accuracy_log_probability or accuracy_log_sampling_target, requested_* or effective_*.
    Why: these make LoadGen copy a share of a performance run's responses into an accuracy log (MLPerf's
    TEST01 audit); levelfield scores a separate accuracy run, so a run that samples responses was not
    run as the rules say, and its logging cost is part of its timing.
    Bad: requested_accuracy_log_probability 0.1.
    Fix: run `levelfield infer` as shipped; the runner sets these from the rules and no user setting
    changes them.
    """
    yield from _findings(sub, ctx, accuracy_log_differences, _RERUN + "never change LoadGen's accuracy-log sampling")
