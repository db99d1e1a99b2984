"""Every task x framework x scenario x mode through the LoadGen runner, smoke profile.

One test per task x framework builds the compiled implementation once and runs
all eight scenario x mode combinations in-process (`infer(options, impl=...)`),
so each framework compiles each batch shape once. Accuracy mode must log
exactly the response rows `model_spec.to_response(impl.predict(...))` gives
over the same eval rows, and score what the trainer's eval formula
(`metric.score(impl.predict(eval_inputs), labels)`) scores; the response rows
must lose nothing the metric needs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_runner import check_performance_result

from conftest import infer_options
from levelfield.ground.accuracy import read_accuracy_log
from levelfield.harness.runner import infer

TASKS = ["fmnist-resnet", "seq-transformer", "ctr-dlrm"]
FRAMEWORKS = ["pytorch", "tensorflow", "jax"]
SCENARIOS = ["singlestream", "multistream", "server", "offline"]
# Accuracy mode does not time anything, so the matrix sends Server's samples 10x faster than
# smoke's 200/s; the default rate is exercised by test_runner.py.
FAST_SERVER_ACCURACY = "version: 1\nserver: {target_qps: 2000}\n"


def assert_rows_match(task_id: str, logged: np.ndarray, direct: np.ndarray) -> None:
    """The logged responses are the direct ones; batch shapes differ by scenario, so a float may move an ulp."""
    assert logged.dtype == direct.dtype and logged.shape == direct.shape
    if np.issubdtype(direct.dtype, np.floating):
        np.testing.assert_allclose(logged, direct, rtol=1e-4, atol=1e-5, err_msg=task_id)
    else:  # class ids: only a near-tie of two logits could flip one; allow a row in a thousand
        mismatched_rows = np.any((logged != direct).reshape(len(direct), -1), axis=1)
        assert mismatched_rows.mean() <= 1e-3, (task_id, int(mismatched_rows.sum()))


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("task_id", TASKS)
def test_every_scenario_and_mode(task_id, framework, tmp_path):
    from levelfield.ground.registry import load_implementation, task_module
    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.interface import Recipe
    from levelfield.rules import load_suite

    task = load_suite().task(task_id)
    inputs, metric, spec = (task_module(task, part) for part in ("inputs", "metric", "model_spec"))
    n = task.training_settings("smoke")["eval_samples"]
    arrays = load_dataset(task)
    eval_inputs = {k: v[:n] for k, v in inputs.model_inputs(arrays, "eval").items()}
    labels = inputs.labels(arrays, "eval")[:n]
    impl = load_implementation(task_id, framework)(Recipe.from_task(task))
    impl.load(spec.init_weights(0))
    outputs = impl.predict(eval_inputs)
    trainer_value = metric.score(outputs, labels)  # the trainer's eval formula
    direct_rows = spec.to_response(outputs)
    assert direct_rows.dtype == spec.RESPONSE_DTYPE and direct_rows.shape == (n, *spec.RESPONSE_SHAPE)
    assert metric.score(direct_rows, labels) == trainer_value
    conf = tmp_path / "user.yaml"
    conf.write_text(FAST_SERVER_ACCURACY)

    for scenario in SCENARIOS:
        for mode in ("performance", "accuracy"):
            out = tmp_path / f"{scenario}-{mode}"
            fast_server = mode == "accuracy" and scenario == "server"
            result = infer(
                infer_options(task_id, framework, scenario, mode, out, user_conf=conf if fast_server else None),
                impl=impl,
            )
            assert json.loads((out / "result.json").read_text()) == json.loads(json.dumps(result))
            if mode == "performance":
                check_performance_result(result, scenario)
                assert not (out / "accuracy.json").exists()
                if scenario == "server":
                    assert result["server_batches"]["count"] >= 1
                continue
            accuracy = json.loads((out / "accuracy.json").read_text())
            assert accuracy["status"] == "completed" and result["status"] == "completed"
            assert accuracy["metric"] == metric.NAME and accuracy["samples"] == n
            assert accuracy["pass"] == (accuracy["value"] >= accuracy["threshold"])
            assert result["submittable"] is False
            rows = read_accuracy_log(out / "mlperf_log_accuracy.json", task_id, n)
            assert_rows_match(task_id, rows, direct_rows)
            assert accuracy["value"] == metric.score(rows, labels)
            tolerance = 1e-4 if task_id == "ctr-dlrm" else 1e-3  # a tie's worth of AUC; a row in a thousand
            assert accuracy["value"] == pytest.approx(trainer_value, abs=tolerance)
