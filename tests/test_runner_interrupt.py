"""Interrupted and failed `levelfield infer` runs never leave a result that looks like one.

A real `levelfield infer` process receives SIGTERM / SIGINT while LoadGen runs;
it must exit with 128 + the signal (as `levelfield train`), leave result.json
with "status": "aborted" and no metric, and no accuracy.json. A predict that
raises mid-run (injected: a real predict cannot be made to fail on cue) ends
the run as "failed" instead of hanging LoadGen or crashing in its C++ thread.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from conftest import cli_command, infer_args, infer_options
from levelfield.harness.run_state import InferAborted
from levelfield.harness.runner import infer

TASK = "ctr-dlrm"
METRIC_KEYS = ("p90_latency_ms", "p99_latency_ms", "samples_per_s", "valid", "result_validity", "accuracy")
# Long enough that LoadGen is certainly still running when the signal arrives.
LONG_RUN_CONF = "version: 1\n'*': {min_duration_ms: 120000, max_duration_ms: 240000}\nserver: {target_qps: 20}\n"
# The performance run's LoadGen logs go to run_1/, an accuracy run's to the folder itself.
DETAIL_LOG = {"performance": "run_1/mlperf_log_detail.txt", "accuracy": "mlperf_log_detail.txt"}


def start_infer(tmp_path, scenario: str, mode: str) -> tuple[subprocess.Popen, object]:
    conf = tmp_path / "user.yaml"
    conf.write_text(LONG_RUN_CONF)
    out = tmp_path / "run"
    proc = subprocess.Popen(
        cli_command(*infer_args(out, TASK, "jax", scenario, mode, "--user-conf", str(conf))),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # LoadGen opens its detail log when StartTest begins, after the warm-up.
    deadline = time.monotonic() + 240
    while not (out / DETAIL_LOG[mode]).exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "LoadGen never started"
        time.sleep(0.1)
    time.sleep(0.5)
    return proc, out


def assert_aborted(out, signal_name: str) -> dict:
    record = json.loads((out / "result.json").read_text())
    assert record["status"] == "aborted" and record["phase"] == "loadgen"
    assert signal_name in record["reason"] and record["submittable"] is False
    assert not set(METRIC_KEYS) & set(record), record
    assert not (out / "accuracy.json").exists()
    return record


@pytest.mark.parametrize(
    "signum, scenario, mode", [(signal.SIGTERM, "singlestream", "performance"), (signal.SIGINT, "server", "accuracy")]
)
def test_signal_during_loadgen_records_an_aborted_run(tmp_path, signum, scenario, mode):
    proc, out = start_infer(tmp_path, scenario, mode)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, (proc.returncode, stderr[-2000:])
    assert "Traceback" not in stderr and "aborted" in stderr and "result.json" in stderr, stderr
    record = assert_aborted(out, signal.Signals(signum).name)
    assert (record["scenario"], record["mode"]) == (scenario, mode)


FAILING_PREDICT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from levelfield.cli.commands.infer import _aborted
    from levelfield.harness.options import InferOptions
    from levelfield.harness.run_state import InferAborted
    from levelfield.harness.runner import infer
    from levelfield.reference.interface import Recipe
    from levelfield.ground.registry import load_implementation
    from levelfield.rules import load_suite

    base = load_implementation("ctr-dlrm", "jax")
    out = Path(sys.argv[2])

    class DeviceLost(base):
        calls = 0

        def predict(self, inputs):
            # Inside the timed LoadGen run (its log exists), after the warm-up and the sizing probes.
            if (out / "run_1" / "mlperf_log_detail.txt").exists():
                DeviceLost.calls += 1
                if DeviceLost.calls > 30:
                    raise RuntimeError("device lost")
            return super().predict(inputs)

    impl = DeviceLost(Recipe.from_task(load_suite().task("ctr-dlrm")))
    options = InferOptions(task_id="ctr-dlrm", framework="jax", scenario=sys.argv[1], mode="performance",
                           out=out, profile="smoke")
    try:
        infer(options, impl=impl)
    except InferAborted as e:
        sys.exit(_aborted(e))
    sys.exit("the run did not fail")
""")


@pytest.mark.parametrize("scenario", ["singlestream", "server"])  # LoadGen's issue thread; the Server worker
def test_predict_failure_mid_run_records_a_failed_run(tmp_path, scenario):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-c", FAILING_PREDICT, scenario, str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert "RuntimeError: device lost" in proc.stderr  # the cause, with its traceback
    record = json.loads((out / "result.json").read_text())
    assert record["status"] == "failed" and record["phase"] == "loadgen" and "device lost" in record["reason"]
    assert not set(METRIC_KEYS) & set(record)


def test_undefined_metric_records_a_failed_run(tmp_path):
    """NaN weights give NaN scores: ROC AUC is undefined, so the accuracy run fails instead of reporting."""
    from levelfield.reference.ctr_dlrm.common.model_spec import init_weights
    from levelfield.reference.weights import save_weights

    weights = {name: np.full_like(value, np.nan) for name, value in init_weights(0).items()}
    save_weights(tmp_path / "nan.npz", weights)
    out = tmp_path / "run"
    with pytest.raises(InferAborted) as caught:
        infer(infer_options(TASK, "jax", "offline", "accuracy", out, weights=tmp_path / "nan.npz"))
    assert caught.value.exit_code == 1 and not caught.value.loadgen_running
    record = json.loads((out / "result.json").read_text())
    assert record["status"] == "failed" and record["phase"] == "scoring" and "NaN" in record["reason"]
    assert not (out / "accuracy.json").exists()


def test_predict_failure_in_warmup_is_recorded_and_raised(tmp_path):
    """Before LoadGen starts nothing needs the process to end: the error is raised as it was."""
    from levelfield.ground.registry import load_implementation
    from levelfield.reference.interface import Recipe
    from levelfield.rules import load_suite

    class OutOfMemory(load_implementation(TASK, "jax")):
        def predict(self, inputs):
            raise MemoryError("out of device memory")

    impl = OutOfMemory(Recipe.from_task(load_suite().task(TASK)))
    out = tmp_path / "run"
    with pytest.raises(MemoryError, match="out of device memory"):
        infer(
            infer_options(TASK, "jax", "server", "performance", out),
            impl=impl,
        )
    record = json.loads((out / "result.json").read_text())
    assert record["status"] == "failed" and record["phase"] == "warmup" and "MemoryError" in record["reason"]
    assert not set(METRIC_KEYS) & set(record)
