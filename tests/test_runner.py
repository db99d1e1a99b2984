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
from conftest import assert_user_error, run_cli
from levelfield.reference.harness.runner import InferOptions, infer

TASK = "ctr-dlrm"
SCENARIOS = ["singlestream", "multistream", "server", "offline"]
METRIC_KEY = {"singlestream": "p90_latency_ms", "multistream": "p99_latency_ms",
              "server": "samples_per_s", "offline": "samples_per_s"}
COMMON_KEYS = ["status", "task", "framework", "framework_version", "compile_mode", "device", "scenario", "mode",
               "profile", "weights", "warmup_s", "loadgen_version", "submittable", "system_fingerprint",
               "environment", "sut"]


def check_performance_result(result: dict, scenario: str) -> None:
    for key in COMMON_KEYS + ["valid", "result_validity", "invalid_reasons"]:
        assert key in result, key
    assert result["status"] == "completed"
    assert result[METRIC_KEY[scenario]] > 0
    assert result["result_validity"] in ("VALID", "INVALID")
    assert result["valid"] == (result["result_validity"] == "VALID")
    assert result["valid"] or result["invalid_reasons"]  # INVALID always says why
    assert result["loadgen_version"].startswith("6.0.17 ")
    assert result["submittable"] is False  # smoke is never submittable, VALID or not
    assert result["system_fingerprint"]["digest"] and result["environment"]["digest"]


def test_cli_performance_singlestream(tmp_path):
    framework = "jax"
    out = tmp_path / "run"
    proc = run_cli("infer", "--task", TASK, "--framework", framework, "--scenario", "singlestream",
                   "--mode", "performance", "--profile", "smoke", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    check_performance_result(result, "singlestream")
    assert result["framework"] == framework and result["weights"] == "init(seed=0)"
    assert "p90_latency_ms" in proc.stdout and ("VALID" in proc.stdout)
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "settings.json"):
        assert (out / name).is_file(), name
    settings = json.loads((out / "settings.json").read_text())
    assert settings["qsl_rng_seed"] == 2718281828459045235 and settings["latency_percentile"] == 0.90


@pytest.fixture(scope="module")
def jax_ctr():
    """(implementation, the metric of impl.predict over the smoke eval rows per weights seed), without LoadGen."""
    from levelfield.reference.ctr_dlrm.common import inputs, metric, model_spec
    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.interface import Recipe
    from levelfield.reference.registry import load_implementation
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
    result = infer(InferOptions(task_id=TASK, framework="jax", scenario="server", mode="accuracy",
                                out=tmp_path / "run", profile="smoke", progress=False), impl=impl)
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
    result = infer(InferOptions(task_id=TASK, framework="jax", scenario="offline", mode="accuracy", out=out,
                                profile="smoke", weights=weights, progress=False), impl=impl)
    assert result["weights"] == str(weights)
    assert result["accuracy"]["value"] == scores[1]  # one chunk of the same 1024 rows: bit-identical


def test_offline_query_holds_min_sample_count(tmp_path, jax_ctr):
    out = tmp_path / "run"
    infer(InferOptions(task_id=TASK, framework="jax", scenario="offline", mode="performance", out=out,
                       profile="smoke", progress=False), impl=jax_ctr[0])
    from levelfield.reference.harness.loadgen_results import read_detail
    records, _ = read_detail(out / "mlperf_log_detail.txt")
    assert records["effective_samples_per_query"] >= 1024  # the smoke profile's min_sample_count


def test_an_offline_query_too_small_for_the_model_is_sized_again_from_loadgens_measurement(tmp_path, jax_ctr):
    """The smoke profile asks for 1,024 samples in 0.5 s; ctr-dlrm answers them in milliseconds, so
    LoadGen's first run ends before its minimum duration (INVALID, 'Increase expected QPS')."""
    from levelfield.reference.harness.loadgen_config import MAX_OFFLINE_RESIZES, OFFLINE_RESIZE_HEADROOM
    from levelfield.reference.harness.loadgen_results import read_detail
    out = tmp_path / "run"
    result = infer(InferOptions(task_id=TASK, framework="jax", scenario="offline", mode="performance", out=out,
                                profile="smoke", progress=False), impl=jax_ctr[0])
    resizes = result["offline_resized"]
    assert 1 <= len(resizes) <= MAX_OFFLINE_RESIZES
    assert resizes[0]["first_expected_qps"] == pytest.approx(1024 / (0.5 * 1.1))  # from min_sample_count
    for before, after in zip(resizes, resizes[1:]):
        assert after["first_expected_qps"] == before["expected_qps"]
    last = resizes[-1]
    assert last["expected_qps"] == pytest.approx(max(last["first_expected_qps"],
                                                     last["first_samples_per_s"] * OFFLINE_RESIZE_HEADROOM))
    records, _ = read_detail(out / "mlperf_log_detail.txt")  # LoadGen's files are those of the last run
    assert records["requested_offline_expected_qps"] == pytest.approx(last["expected_qps"], rel=1e-5)
    assert json.loads((out / "settings.json").read_text())["expected_qps"] == last["expected_qps"]
    assert result["valid"] and records["result_min_duration_met"] is True, result["invalid_reasons"]


def test_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "result.json").write_text("{}")
    proc = run_cli("infer", "--task", TASK, "--framework", "jax", "--scenario", "offline", "--mode", "performance",
                   "--profile", "smoke", "--out", str(out))
    assert_user_error(proc, "result.json", "--force")


def test_user_conf_typo_names_the_key(tmp_path):
    conf = tmp_path / "user.yaml"
    conf.write_text("version: 1\nserver:\n  target_qsp: 100\n")
    proc = run_cli("infer", "--task", TASK, "--framework", "jax", "--scenario", "server", "--mode", "performance",
                   "--profile", "smoke", "--user-conf", str(conf), "--out", str(tmp_path / "run"))
    assert_user_error(proc, str(conf), "target_qsp", "target_qps")
    assert not (tmp_path / "run").exists()  # failed before anything ran


def test_user_conf_overrides_reach_settings(tmp_path):
    from levelfield.reference.harness.loadgen_config import effective_settings
    from levelfield.rules import load_suite

    conf = tmp_path / "user.yaml"
    conf.write_text("version: 1\n'*': {min_duration_ms: 700}\nserver: {target_qps: 50, max_batch_size: 4}\n")
    suite = load_suite()
    eff = effective_settings(suite, suite.task(TASK), "smoke", "server", "performance", user_conf=conf,
                             dataset_samples=1024)
    assert (eff["min_duration_ms"], eff["target_qps"], eff["max_batch_size"]) == (700, 50, 4)
    assert eff["latency_bound_ms"] == 10 and eff["user_overrides"] == ["max_batch_size", "min_duration_ms",
                                                                        "target_qps"]


def test_missing_weights_file_is_named(tmp_path):
    missing = tmp_path / "nope.npz"
    proc = run_cli("infer", "--task", TASK, "--framework", "jax", "--scenario", "offline", "--mode", "accuracy",
                   "--profile", "smoke", "--weights", str(missing), "--out", str(tmp_path / "run"))
    assert_user_error(proc, str(missing), "not found")


def test_sut_choice_is_recorded(tmp_path, jax_ctr):
    for kind in ("plain", "fast"):
        result = infer(InferOptions(task_id=TASK, framework="jax", scenario="multistream", mode="performance",
                                    out=tmp_path / kind, profile="smoke", sut=kind, progress=False), impl=jax_ctr[0])
        check_performance_result(result, "multistream")
        assert result["sut"] == kind


def test_unknown_sut_is_a_user_error(tmp_path):
    proc = run_cli("infer", "--task", TASK, "--framework", "jax", "--scenario", "offline", "--mode", "performance",
                   "--profile", "smoke", "--sut", "turbo", "--out", str(tmp_path / "run"))
    assert proc.returncode == 2 and "--sut" in proc.stderr and "turbo" in proc.stderr


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("mode, expected", [("performance", "12.5/60.0 s min duration, 700 queries, 512 samples"),
                                            ("accuracy", "512/1024 samples, 700 queries, 12.5 s")])
def test_progress_bar_shows_time_queries_and_samples(mode, expected):
    from levelfield.reference.harness.progress import LoadGenProgress

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
    """No JAX compilation happens inside LoadGen's run (its threads), only in the warm-up (main thread)."""
    import logging

    import jax
    from levelfield.reference.interface import Recipe
    from levelfield.reference.registry import load_implementation
    from levelfield.rules import load_suite

    impl = load_implementation(TASK, "jax")(Recipe.from_task(load_suite().task(TASK)))  # nothing compiled yet
    with jax.log_compiles(True), caplog.at_level(logging.DEBUG):
        for scenario in ("server", "offline", "multistream"):
            infer(InferOptions(task_id=TASK, framework="jax", scenario=scenario, mode="performance",
                               out=tmp_path / scenario, profile="smoke", progress=False), impl=impl)
    compiles = [r for r in caplog.records if "ompil" in r.getMessage()]
    assert any(r.threadName == "MainThread" for r in compiles)  # the warm-up did compile
    late = [(r.threadName, r.getMessage()[:120]) for r in compiles if r.threadName != "MainThread"]
    assert not late, late[:3]
