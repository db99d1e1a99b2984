"""Settings only other scenarios have: the example's runs are all Offline, so its first performance run
is refiled, at the record level, as MultiStream or Server with the requested_* lines LoadGen writes for
that scenario holding the rules' values; then one value is changed and must give exactly its code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_checker_fixtures import EXAMPLE, PLANTS

import levelfield.checker.checks  # noqa: F401 - registers every check
from levelfield.checker.engine import check_tree
from levelfield.checker.findings import REGISTRY

SETTINGS_CODES = sorted(code for code, c in REGISTRY.items() if c.func.__module__.endswith(".settings"))


def _refiled(scenario: str, plant=lambda rules: {}):
    """(submission, context) holding only the example's first performance run, refiled as `scenario`,
    its detail logs asking for that scenario's rules with plant(rules)'s requested_* values over them."""
    import dataclasses

    from levelfield.checker.checks.settings import PERCENTILE_KEYS, profile_rules
    from levelfield.checker.context import Context
    from levelfield.ground.loadgen_names import SCENARIO_NAMES
    from levelfield.ground.metrics import NS_PER_MS
    from levelfield.ground.parse import parse_mllog

    report = check_tree(EXAMPLE, select=["INF001"])
    ctx = Context(report.suite)
    run = next(r for r in report.submission.inferences if r.mode == "performance")
    run = dataclasses.replace(run, scenario=scenario)
    rules = profile_rules(ctx, run)
    asked = {
        "requested_scenario": SCENARIO_NAMES[scenario],
        "effective_scenario": SCENARIO_NAMES[scenario],
        "requested_min_duration_ms": rules["min_duration_ms"],
        "effective_min_duration_ms": rules["min_duration_ms"],
        "requested_min_query_count": rules["min_query_count"],
        "effective_min_query_count": rules["min_query_count"],
        f"requested_{PERCENTILE_KEYS[scenario]}": rules["latency_percentile"],
        "effective_target_latency_percentile": rules["latency_percentile"],
    }
    if scenario == "multistream":
        asked["requested_multi_stream_samples_per_query"] = rules["samples_per_query"]
        asked["effective_samples_per_query"] = rules["samples_per_query"]
    if scenario == "server":
        asked["requested_server_target_latency_ns"] = int(rules["latency_bound_ms"] * NS_PER_MS)
        asked["effective_target_latency_ns"] = int(rules["latency_bound_ms"] * NS_PER_MS)
    asked.update(plant(rules))
    repeats = []
    for repeat in run.repeats:
        lines = [
            line
            for line in (EXAMPLE / repeat.detail_path).read_text().splitlines()
            if not any(f'"key": "{key}"' in line for key in asked)
        ]
        lines += [
            ":::MLLOG "
            + json.dumps(
                {
                    "key": key,
                    "value": value,
                    "time_ms": 0.0,
                    "namespace": "mlperf::logging",
                    "event_type": "POINT_IN_TIME",
                    "metadata": {},
                }
            )
            for key, value in asked.items()
        ]
        detail = parse_mllog(("\n".join(lines) + "\n").encode(), repeat.detail_path)
        repeats.append(dataclasses.replace(repeat, detail=detail))
    sub = dataclasses.replace(report.submission, inferences=[dataclasses.replace(run, repeats=repeats)])
    return sub, ctx


def _settings_codes(sub, ctx) -> set[str]:
    return {code for code in SETTINGS_CODES if list(REGISTRY[code].func(sub, ctx))}


def _half_the_samples_per_query(rules):
    return {"requested_multi_stream_samples_per_query": rules["samples_per_query"] // 2}


def _twenty_times_the_latency_bound(rules):
    from levelfield.ground.metrics import NS_PER_MS

    return {"requested_server_target_latency_ns": int(rules["latency_bound_ms"] * 20 * NS_PER_MS)}


# code -> (scenario, the requested_* values that break its rule, derived from the rules' own)
SCENARIO_PLANTS = {
    "INF013": ("multistream", _half_the_samples_per_query),
    "INF014": ("server", _twenty_times_the_latency_bound),
}


@pytest.mark.parametrize("scenario", ["multistream", "server"])
def test_a_refiled_run_asking_for_the_rules_settings_passes_every_settings_check(scenario):
    assert _settings_codes(*_refiled(scenario)) == set()


@pytest.mark.parametrize("code", sorted(SCENARIO_PLANTS))
def test_a_refiled_run_breaking_one_setting_gives_exactly_its_code(code):
    scenario, plant = SCENARIO_PLANTS[code]
    assert _settings_codes(*_refiled(scenario, plant)) == {code}


def _effective_half_the_samples_per_query(rules):
    return {"effective_samples_per_query": rules["samples_per_query"] // 2}


def _effective_twenty_times_the_latency_bound(rules):
    from levelfield.ground.metrics import NS_PER_MS

    return {"effective_target_latency_ns": int(rules["latency_bound_ms"] * 20 * NS_PER_MS)}


@pytest.mark.parametrize(
    "code, scenario, plant",
    [
        ("INF013", "multistream", _effective_half_the_samples_per_query),
        ("INF014", "server", _effective_twenty_times_the_latency_bound),
    ],
)
def test_a_refiled_run_whose_effective_setting_breaks_a_rule_gives_its_code(code, scenario, plant):
    """The requested_* line holds the rules' value, the effective_* one LoadGen ran with does not."""
    assert _settings_codes(*_refiled(scenario, plant)) == {code}


def test_a_lower_latency_percentile_is_the_latency_constraint_too():
    from levelfield.checker.checks.settings import PERCENTILE_KEYS

    key = f"requested_{PERCENTILE_KEYS['multistream']}"
    lower = _refiled("multistream", lambda rules: {key: rules["latency_percentile"] - 0.09})
    assert _settings_codes(*lower) == {"INF014"}


# Checks whose failing fixture needs a tree the example cannot be edited into (a plugin's build, a rules 1.2
# throughput or fidelity result, an ONNX Runtime training folder): each module plants its own and names the code.
FIXTURES_ELSEWHERE = {
    "INF020": "test_fidelity_rules.py",
    "PLG001": "test_plugins.py",
    "PLG002": "test_plugins.py",
    "PLG003": "test_plugins.py",
    "TRN027": "test_checker_throughput_results.py",
    "TRN028": "test_checker_throughput_results.py",
    "TRN029": "test_checker_throughput_results.py",
    "TRN030": "test_checker_throughput_results.py",
    "TRN031": "test_checker_throughput_results.py",
    "TRN032": "test_onnxruntime.py",
}


def test_every_check_has_a_failing_fixture():
    # CHK001: tests/test_checker_core.py; the other plants: tests/test_checker_fixtures.py, or the module
    # FIXTURES_ELSEWHERE names, which must name the code it plants.
    assert sorted(set(REGISTRY) - {"CHK001"}) == sorted({*PLANTS, *SCENARIO_PLANTS, *FIXTURES_ELSEWHERE})
    for code, module in FIXTURES_ELSEWHERE.items():
        assert code in (Path(__file__).parent / module).read_text(), (code, module)
    assert not set(PLANTS) & set(SCENARIO_PLANTS)
