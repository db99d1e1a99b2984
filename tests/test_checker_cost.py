"""The cost checks' passing twins and their inference side (checker/checks/cost.py, TRN017's new domains).

The failing fixtures of SYS009, SYS010, SYS011, REP004 and REP005 on training logs and environments are
planted in tests/cost_plants.py (run by test_checker_fixtures.py); here each has an honest twin that checks
clean, and the same rules are shown on inference repeats (result.json `runs[i].resources`).
"""

from __future__ import annotations

import pytest
from test_checker_fixtures import EXAMPLE

from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from levelfield.ground.environment import distributions_digest
from levelfield.ground.meter import NOT_MEASURED, price_per_million_samples_usd
from tests.cost_plants import (
    HOURLY_USD,
    declare_price,
    declared_kernel,
    every_environment,
    honest_price,
    host_record,
    log_cost,
    performance_resources,
    with_host_load_limit,
)
from tests.submission_edit import copy_tree, first, reseal


@pytest.fixture
def tree(tmp_path):
    return copy_tree(EXAMPLE, tmp_path / "sub")


def found(tree, **kwargs) -> list[tuple[str, str]]:
    reseal(tree)
    return [(f.code, f.message) for f in check_tree(tree, **kwargs).active]


def test_honest_cost_figures_check_clean(tree, tmp_path):
    """A run as the trainer now logs it: its load under the threshold, priced at the filed description's
    rate, one meter for every run, a host record that matches the description, a digest of its list."""
    declare_price(tree)
    for index in range(5):
        log = first(tree, f"training/result_{index}.txt")
        log_cost(
            log,
            {
                LK.SAMPLE_INTERVAL_MS: 100,
                LK.PEAK_TREE_RSS_MIB: 812.5,
                LK.TREE_PROCESSES: 3,
                LK.PROCESS_CPU_S: 1.9,
                LK.PROCESS_CPU_SHARE: 0.47,
                LK.HOST_CPU_SHARE: 0.5,
                LK.OTHERS_CPU_SHARE: 0.03,
                LK.CPU_ENERGY_J: NOT_MEASURED,
                LK.ENERGY_J: NOT_MEASURED,
                LK.PRICE_USD: honest_price(log),
            },
        )
    listed = {"numpy": "2.5.0", "levelfield": "0.1.0"}
    every_environment(
        tree,
        lambda env: env.update(
            distributions=listed,
            distributions_digest=distributions_digest(listed),
            host=host_record(declared_kernel(tree)),
        ),
    )

    def priced(resources, run):
        resources["price_usd_per_million_samples"] = price_per_million_samples_usd(
            HOURLY_USD, 1, resources["window_s"], resources["samples"]
        )

    performance_resources(tree, priced)
    assert found(tree, rules_dir=with_host_load_limit(tmp_path)) == []


def test_the_host_load_is_judged_only_under_rules_with_a_threshold(tree):
    log_cost(first(tree, "training/result_1.txt"), {LK.OTHERS_CPU_SHARE: 0.9, LK.HOST_CPU_SHARE: 1.0})
    assert found(tree) == []  # rules 1.1: no checks.host_load_max_others_share


def test_a_loaded_inference_repeat_is_sys009(tree, tmp_path):
    def loaded(resources, run):
        if run == 2:
            resources.update(others_cpu_share=0.5, host_cpu_share=0.95)

    performance_resources(tree, loaded)
    assert found(tree, rules_dir=with_host_load_limit(tmp_path)) == [
        ("SYS009", "run 2: other processes kept the host busy during the timed run")
    ]


def test_a_price_without_a_declared_rate_and_a_repeat_priced_at_another_are_sys010(tree):
    log_cost(first(tree, "training/result_0.txt"), {LK.PRICE_USD: 0.01})
    performance_resources(tree, lambda resources, run: resources.update(price_usd_per_million_samples=0.5))
    codes = found(tree)
    assert {code for code, _ in codes} == {"SYS010"} and len(codes) == 1 + 3  # the log, and each repeat
    assert "declares no hourly_price_usd" in codes[0][1]


def test_a_repeat_whose_shares_contradict_and_repeats_metered_unalike_are_rep005(tree):
    def edit(resources, run):
        if run == 1:
            resources.update(others_cpu_share=0.6, host_cpu_share=0.4)
        if run == 3:
            resources.update(cpu_energy_j=12.5)  # a meter in one repeat only

    performance_resources(tree, edit)
    messages = [message for code, message in found(tree) if code == "REP005"]
    assert len(messages) == 2 and "above host_cpu_share" in messages[0] and "metered unlike run 1" in messages[1]


@pytest.mark.parametrize(
    "key, value",
    [
        (LK.OTHERS_CPU_SHARE, 1.5),
        (LK.CPU_ENERGY_J, "unknown"),
        (LK.ENERGY_J, -1.0),
        (LK.SAMPLE_INTERVAL_MS, 0),
        (LK.PRICE_USD, "0.1"),
    ],
)
def test_cost_values_outside_their_domains_are_trn017(tree, key, value):
    log_cost(first(tree, "training/result_2.txt"), {key: value})
    assert [code for code, _ in found(tree)] == ["TRN017"]


def test_a_malformed_cost_record_is_str010(tree):
    performance_resources(tree, lambda resources, run: resources.update(gpu_energy_j="estimated: 40"))
    assert {code for code, _ in found(tree)} == {"STR010"}
