"""`levelfield infer`: the CLI, result/accuracy files, settings, user errors, the progress bar.

The smoke profile on ctr-dlrm in JAX (the fastest task and framework to start).
Every task x framework x scenario x mode runs in test_runner_matrix.py; the
accuracy-log reader and the trainer-equals-runner acceptance check live in
test_runner_accuracy.py; interrupts and failures in test_runner_interrupt.py.
Accuracy mode must report exactly what scoring `impl.predict` over the same
eval rows gives: the runner's number and the trainer's eval number come from
the same code.
"""

from __future__ import annotations

import io
import json

import pytest

from conftest import assert_user_error, infer_cli, infer_options
from levelfield.harness.runner import infer

TASK = "ctr-dlrm"
SCENARIOS = ["singlestream", "multistream", "server", "offline"]
METRIC_KEY = {
    "singlestream": "p90_latency_ms",
    "multistream": "p99_latency_ms",
    "server": "samples_per_s",
    "offline": "samples_per_s",
}
COMMON_KEYS = [
    "status",
    "task",
    "framework",
    "framework_version",
    "compile_mode",
    "device",
    "scenario",
    "mode",
    "profile",
    "weights",
    "warmup_s",
    "loadgen_version",
    "submittable",
    "system_fingerprint",
    "environment",
    "sut",
]


def check_performance_result(result: dict, scenario: str) -> None:
    for key in COMMON_KEYS + ["valid", "result_validity", "invalid_reasons"]:
        assert key in result, key
    assert result["status"] == "completed"
    assert result[METRIC_KEY[scenario]] > 0
    assert result["valid"] == (result["result_validity"] == "VALID")
    assert result["valid"], result["invalid_reasons"]  # smoke runs are sized to be VALID on any machine
    assert result["loadgen_version"].startswith("6.0.17 ")
    assert result["submittable"] is False  # smoke is never submittable, VALID or not
    assert result["statistics"]["n"] == result["repeats"] == len(result["runs"])
    assert result["system_fingerprint"]["digest"] and result["environment"]["digest"]
    for run in result["runs"]:  # what each repeat cost (levelfield/harness/run_meter.py)
        cost = run["resources"]
        assert cost["samples"] > 0 and cost["window_s"] > 0 and cost["peak_tree_rss_mib"] > 0
        assert 0 <= cost["others_cpu_share"] <= cost["host_cpu_share"] <= 1
        assert cost["sample_interval_ms"] >= 1 and "price_usd_per_million_samples" not in cost  # no --system
    assert 0 <= result["sizing"]["others_cpu_share"] <= 1  # the host's load while the sizes were measured


def test_cli_performance_singlestream(tmp_path):
    framework = "jax"
    out = tmp_path / "run"
    proc = infer_cli(out, TASK, framework, "singlestream", "performance")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    check_performance_result(result, "singlestream")
    assert result["framework"] == framework and result["weights"] == "init(seed=0)"
    assert "p90_latency_ms" in proc.stdout and ("VALID" in proc.stdout)
    for name in ("run_1/mlperf_log_summary.txt", "run_1/mlperf_log_detail.txt", "settings.json"):
        assert (out / name).is_file(), name
    settings = json.loads((out / "settings.json").read_text())
    assert settings["qsl_rng_seed"] == 2718281828459045235 and settings["latency_percentile"] == 0.90


@pytest.fixture(scope="module")
def jax_ctr():
    """(implementation, the metric of impl.predict over the smoke eval rows per weights seed), without LoadGen."""
    from levelfield.ground.registry import load_implementation
    from levelfield.reference.ctr_dlrm.common import inputs, metric, model_spec
    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.interface import Recipe
    from levelfield.rules import load_suite

    task = load_suite().task(TASK)
    n = task.training_settings("smoke")["eval_samples"]
    arrays = load_dataset(task)
    eval_inputs = {k: v[:n] for k, v in inputs.model_inputs(arrays, "eval").items()}
    labels = inputs.labels(arrays, "eval")[:n]
    impl = load_implementation(TASK, "jax")(Recipe.from_task(task))
    scores = {}
    for seed in (0, 1):
        impl.load(model_spec.init_weights(seed))
        scores[seed] = metric.score(impl.predict(eval_inputs), labels)
    return impl, scores


def test_server_accuracy_at_the_smoke_rate(tmp_path, jax_ctr):
    impl, scores = jax_ctr
    result = infer(
        infer_options(TASK, "jax", "server", "accuracy", tmp_path / "run"),
        impl=impl,
    )
    accuracy = json.loads((tmp_path / "run" / "accuracy.json").read_text())
    assert accuracy["metric"] == "roc_auc" and accuracy["samples"] == 1024 and accuracy["status"] == "completed"
    assert accuracy["threshold"] == pytest.approx(0.826 * 0.99)
    # Server batches take any size; float rounding may move the last bits of a logit,
    # never the AUC by more than a tie's worth.
    assert accuracy["value"] == pytest.approx(scores[0], abs=1e-6)
    assert result["server_batches"]["count"] >= 1 and result["submittable"] is False


def test_accuracy_with_weights_file_equals_direct_score(tmp_path, jax_ctr):
    from levelfield.reference.ctr_dlrm.common.model_spec import init_weights
    from levelfield.reference.weights import save_weights

    impl, scores = jax_ctr
    weights = tmp_path / "w.npz"
    save_weights(weights, init_weights(1))
    out = tmp_path / "run"
    result = infer(
        infer_options(TASK, "jax", "offline", "accuracy", out, weights=weights),
        impl=impl,
    )
    assert result["weights"] == str(weights)
    assert result["accuracy"]["value"] == scores[1]  # one chunk of the same 1024 rows: bit-identical


def test_offline_query_holds_min_sample_count(tmp_path, jax_ctr):
    out = tmp_path / "run"
    infer(
        infer_options(TASK, "jax", "offline", "performance", out),
        impl=jax_ctr[0],
    )
    from levelfield.harness.loadgen_results import read_detail

    records, _ = read_detail(out / "run_1" / "mlperf_log_detail.txt")
    assert records["effective_samples_per_query"] >= 1024  # the smoke profile's min_sample_count


def test_performance_repeats_write_one_folder_each_and_their_spread(tmp_path, jax_ctr):
    from levelfield.ground.stats import spread
    from levelfield.harness.loadgen_results import read_detail

    out = tmp_path / "run"
    result = infer(
        infer_options(TASK, "jax", "singlestream", "performance", out, repeats=3),
        impl=jax_ctr[0],
    )
    assert result["repeats"] == 3 and [r["run"] for r in result["runs"]] == [1, 2, 3]
    logged = []
    for run in result["runs"]:
        records, _ = read_detail(out / run["folder"] / "mlperf_log_detail.txt")
        assert run["p90_latency_ms"] == records["result_90.00_percentile_latency_ns"] / 1e6
        logged.append(run["p90_latency_ms"])
    assert result["statistics"] == spread(logged) and result["p90_latency_ms"] == pytest.approx(sum(logged) / 3)
    assert result["statistics"]["ci95_low"] < result["p90_latency_ms"] < result["statistics"]["ci95_high"]
    assert json.loads((out / "settings.json").read_text())["repeats"] == 3


def test_the_profile_sets_the_repeats(tmp_path, jax_ctr):
    from levelfield.rules import load_suite

    result = infer(
        infer_options(TASK, "jax", "offline", "performance", tmp_path / "run", profile="demo"),
        impl=jax_ctr[0],
    )
    assert result["repeats"] == load_suite().profiles["demo"]["inference_repeats"] == len(result["runs"]) >= 3


def test_a_run_that_ran_out_of_queries_is_sized_again_from_loadgens_measurement(tmp_path, jax_ctr):
    """A sized expected latency 50x too long makes LoadGen generate too few queries for min_duration
    (INVALID, 'Ran out of generated queries'); the runner sizes again from LoadGen's measured mean
    latency and runs the repeats again: the result is VALID and says why it was sized again."""
    from levelfield.harness import sizing
    from levelfield.harness.loadgen_results import read_detail

    original = sizing.size_settings

    def too_slow(eff, costs):
        record = original(eff, costs)
        eff["expected_latency_ms"] *= 50
        return record

    sizing.size_settings = too_slow
    try:
        out = tmp_path / "run"
        result = infer(
            infer_options(TASK, "jax", "singlestream", "performance", out),
            impl=jax_ctr[0],
        )
    finally:
        sizing.size_settings = original
    resized = result["sizing"]["resized"]
    assert 1 <= len(resized) <= sizing.MAX_RESIZES and resized[0]["key"] == "expected_latency_ms"
    assert resized[0]["to"] < resized[0]["from"] / 2 and "ran out" in resized[0]["why"]
    records, _ = read_detail(out / "run_1" / "mlperf_log_detail.txt")
    assert records["requested_single_stream_expected_latency_ns"] == int(resized[-1]["to"] * 1e6)
    assert result["valid"], result["invalid_reasons"]


def test_user_settings_are_never_sized_again(tmp_path, jax_ctr):
    """The user's expected latency wins, even when LoadGen says it was wrong: the INVALID run stands."""
    conf = tmp_path / "user.yaml"
    conf.write_text("version: 1\nsinglestream: {expected_latency_ms: 100}\n")
    result = infer(
        infer_options(TASK, "jax", "singlestream", "performance", tmp_path / "run", user_conf=conf),
        impl=jax_ctr[0],
    )
    assert (
        not result["valid"] and not result["sizing"]["resized"] and result["sizing"]["user"] == ["expected_latency_ms"]
    )
    assert any("min duration" in reason for reason in result["invalid_reasons"])


def test_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "result.json").write_text("{}")
    proc = infer_cli(out, TASK, "jax", "offline", "performance")
    assert_user_error(proc, "result.json", "--force")


def test_user_conf_typo_names_the_key(tmp_path):
    conf = tmp_path / "user.yaml"
    conf.write_text("version: 1\nserver:\n  target_qsp: 100\n")
    proc = infer_cli(tmp_path / "run", TASK, "jax", "server", "performance", "--user-conf", str(conf))
    assert_user_error(proc, str(conf), "target_qsp", "target_qps")
    assert not (tmp_path / "run").exists()  # failed before anything ran


def test_user_conf_overrides_reach_settings(tmp_path):
    from levelfield.harness.loadgen_config import effective_settings
    from levelfield.rules import load_suite

    conf = tmp_path / "user.yaml"
    conf.write_text("version: 1\n'*': {min_duration_ms: 700}\nserver: {target_qps: 50, max_batch_size: 4}\n")
    suite = load_suite()
    task = suite.task(TASK)
    eff = effective_settings(suite, task, "smoke", "server", "performance", user_conf=conf, dataset_samples=1024)
    assert (eff["min_duration_ms"], eff["target_qps"], eff["max_batch_size"]) == (700, 50, 4)
    assert eff["latency_bound_ms"] == task.loadgen_settings("smoke", "server")["latency_bound_ms"]
    assert eff["user_overrides"] == ["max_batch_size", "min_duration_ms", "target_qps"]


def test_missing_weights_file_is_named(tmp_path):
    missing = tmp_path / "nope.npz"
    proc = infer_cli(tmp_path / "run", TASK, "jax", "offline", "accuracy", "--weights", str(missing))
    assert_user_error(proc, str(missing), "not found")


def test_sut_choice_is_recorded(tmp_path, jax_ctr):
    for kind in ("plain", "fast"):
        result = infer(
            infer_options(TASK, "jax", "multistream", "performance", tmp_path / kind, sut=kind),
            impl=jax_ctr[0],
        )
        check_performance_result(result, "multistream")
        assert result["sut"] == kind


def test_unknown_sut_is_a_user_error(tmp_path):
    proc = infer_cli(tmp_path / "run", TASK, "jax", "offline", "performance", "--sut", "turbo")
    assert proc.returncode == 2 and "--sut" in proc.stderr and "turbo" in proc.stderr


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("performance", "12.5/60.0 s min duration, 700 queries, 512 samples"),
        ("accuracy", "512/1024 samples, 700 queries, 12.5 s"),
    ],
)
def test_progress_bar_shows_time_queries_and_samples(mode, expected):
    from levelfield.harness.progress import LoadGenProgress

    eff = {"mode": mode, "min_duration_ms": 60000, "dataset_samples": 1024}
    terminal = FakeTerminal()
    with LoadGenProgress("ctr-dlrm/jax server " + mode, eff, file=terminal) as bar:
        bar.update(12.5, 700, 512)
    assert "ctr-dlrm/jax server" in terminal.getvalue() and expected in terminal.getvalue()
    for file, enabled in ((FakeTerminal(), False), (io.StringIO(), True)):  # disabled; not a terminal
        with LoadGenProgress("x", eff, file=file, enabled=enabled) as quiet:
            quiet.update(1.0, 1, 1)
        assert file.getvalue() == ""


def test_warmup_compiles_every_shape_loadgen_uses(tmp_path, caplog):
    """No JAX compilation happens inside LoadGen's runs, only before them on the compute thread (whose
    compilations are logged while no LoadGen run is in progress)."""
    import logging

    import jax

    from levelfield.ground.registry import load_implementation
    from levelfield.harness import session
    from levelfield.reference.interface import Recipe
    from levelfield.rules import load_suite

    impl = load_implementation(TASK, "jax")(Recipe.from_task(load_suite().task(TASK)))  # nothing compiled yet
    in_loadgen = []
    original = session.Session.loadgen_run

    def marked(self, folder, eff, label, **kwargs):
        in_loadgen.append(True)
        try:
            return original(self, folder, eff, label, **kwargs)
        finally:
            in_loadgen.pop()

    class Marker(logging.Filter):
        def filter(self, record):
            record.in_loadgen = bool(in_loadgen)
            return True

    session.Session.loadgen_run = marked
    caplog.handler.addFilter(Marker())  # a handler's filter sees the records of every jax.* logger
    try:
        with jax.log_compiles(True), caplog.at_level(logging.DEBUG):
            for scenario in ("server", "offline", "multistream"):
                infer(
                    infer_options(TASK, "jax", scenario, "performance", tmp_path / scenario),
                    impl=impl,
                )
    finally:
        session.Session.loadgen_run = original
    compiles = [r for r in caplog.records if "ompil" in r.getMessage()]
    assert any(not getattr(r, "in_loadgen", True) for r in compiles)  # the warm-up did compile
    late = [r.getMessage()[:120] for r in compiles if getattr(r, "in_loadgen", False)]
    assert not late, late[:3]


def test_every_predict_runs_on_the_thread_that_loaded_the_weights(tmp_path):
    """PyTorch's OpenMP pool is per thread: weights loaded on one thread and predicts on another made
    fmnist-resnet 4x slower per sample; the runner keeps load, warm-up and every LoadGen predict on one."""
    import threading

    from levelfield.reference.null_model import CostModel, NullImplementation
    from levelfield.rules import load_suite

    # 100 us a sample, as a slow accelerator: at zero cost Server's sizing chases a rate only the harness
    # limits (88 s of this test's 95), and which thread predicts does not depend on the speed.
    cost = CostModel(per_sample_us=100.0)

    class Recording(NullImplementation):
        def __init__(self, task):
            super().__init__(task, cost)
            self.threads = {"load": set(), "predict": set()}

        def load(self, weights):
            self.threads["load"].add(threading.get_ident())

        def predict(self, inputs):
            self.threads["predict"].add(threading.get_ident())
            return super().predict(inputs)

    for scenario in ("singlestream", "server", "offline"):
        impl = Recording(load_suite().task(TASK))
        infer(
            infer_options(TASK, "none", scenario, "performance", tmp_path / scenario, null_cost=cost),
            impl=impl,
        )
        assert len(impl.threads["load"]) == 1 and impl.threads["predict"] == impl.threads["load"], scenario
        assert threading.get_ident() not in impl.threads["load"]  # and not the main thread, which takes signals


def test_the_offline_probe_lasts_about_half_a_second_at_the_measured_rate(tmp_path):
    """A query fixed by min_sample_count (4,096 samples in 1 ms here) must not size the untimed probe:
    at 1 ms per sample that would be a 4 s probe instead of half a second."""
    from levelfield.harness.session import OFFLINE_PROBE_S
    from levelfield.reference.null_model import CostModel

    conf = tmp_path / "user.yaml"
    conf.write_text("version: 1\noffline: {min_duration_ms: 1, min_sample_count: 4096, batch_size: 32}\n")
    result = infer(
        infer_options(
            TASK,
            "none",
            "offline",
            "performance",
            tmp_path / "run",
            user_conf=conf,
            repeats=1,
            null_cost=CostModel(per_sample_us=1000),
        )
    )
    probe = result["sizing"]["loadgen_probe"]
    assert probe["samples"] <= 2 * OFFLINE_PROBE_S / 0.001  # ~500 samples at 1,000/s, not 4,096
    assert result["valid"], result["invalid_reasons"]


def test_the_offline_probe_starts_at_no_larger_chunk_than_the_rules_query():
    """A query of 8 rows (a standard task's smoke query is 2) is probed from chunks of 8, not four calls of 32."""
    from levelfield.harness.sizing import OFFLINE_CALL_LIMIT_S, probe_plan

    eff = {"scenario": "offline", "min_sample_count": 8}
    assert probe_plan(eff, 32) == ([8, 16, 32], OFFLINE_CALL_LIMIT_S * 1000)
    assert probe_plan({**eff, "min_sample_count": 1024}, 32)[0] == [32]
