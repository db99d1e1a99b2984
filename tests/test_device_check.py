"""The device check (tools/device_check) at CPU scale, as CI runs it, and its plan at GPU size.

    .venv/bin/python -m pytest tests/test_device_check.py -q

Issue 36: the script that proves the GPU paths on a lent GPU machine runs here at smoke size, so it
cannot rot between GPU runs. One full smoke check (every kind of step, every framework installed here:
about 3 minutes on 2 cores) is shared by the tests of this module; the GPU-size plan is checked from
the rules without running it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from levelfield.rules import load_suite
from levelfield.tools.device_check import plan as P
from levelfield.tools.device_check.execute import MIN_STEP_S
from levelfield.tools.device_check.report import JSON_NAME, MARKDOWN_NAME, markdown

FRAMEWORKS = ["pytorch", "tensorflow", "jax"]
TIMEOUT_S = 900  # the smoke check ends in minutes; a hang fails the test, not the CI job


def device_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "levelfield.tools.device_check", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=Path(__file__).resolve().parents[1],
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("device-check")
    result = device_check("--out", str(out), "--size", "smoke", "--time-limit-s", str(TIMEOUT_S - 60))
    return out, result, json.loads((out / JSON_NAME).read_text())


def test_the_smoke_check_passes_every_kind_of_step_in_every_framework(smoke):
    out, result, doc = smoke
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert doc["passed"] and doc["size"] == "smoke" and doc["frameworks"] == FRAMEWORKS
    assert {step["kind"] for step in doc["steps"]} == set(P.KINDS)
    assert [s["id"] for s in doc["steps"] if s["status"] != "passed"] == []
    for kind in ("time_to_accuracy", "throughput", "inference"):
        assert {s["framework"] for s in doc["steps"] if s["kind"] == kind} == set(FRAMEWORKS), kind
    scenarios = {s["scenario"] for s in doc["steps"] if s["kind"] == "inference"}
    assert scenarios == set(P.SCENARIOS)
    (equivalence,) = [s for s in doc["steps"] if s["kind"] == "equivalence"]
    figures = equivalence["figures"]
    assert figures["tests"] > 0 and figures["failures"] == figures["errors"] == 0
    assert figures["frameworks"] == ",".join(FRAMEWORKS)
    assert (out / MARKDOWN_NAME).read_text().startswith("# levelfield device check: PASSED")


def test_each_run_reports_its_device_and_each_training_run_its_fp32_switches(smoke):
    _, _, doc = smoke
    training = [s for s in doc["steps"] if s["kind"] in ("time_to_accuracy", "throughput")]
    for step in training + [s for s in doc["steps"] if s["kind"] == "inference"]:  # result.json's too
        device = step["figures"]["device"]
        assert device["kind"] == "cpu" and device["count"] == 1 and device["name"], step["id"]
        assert device["driver"] is device["cuda_runtime"] is device["cudnn"] is device["nccl"] is None
    switches = {s["framework"]: s["figures"]["precision_switches"] for s in training}
    assert switches["pytorch"]["cudnn_allow_tf32"] is False and switches["pytorch"]["matmul_allow_tf32"] is False
    assert switches["pytorch"]["float32_matmul_precision"] == "highest"
    assert switches["jax"]["jax_default_matmul_precision"] == "highest"
    assert switches["tensorflow"]["tensor_float_32_execution"] is False
    tta = [s for s in doc["steps"] if s["kind"] == "time_to_accuracy"]
    assert all(s["figures"]["status"] == "success" and s["figures"]["time_to_train_s"] > 0 for s in tta)


def test_a_check_stopped_by_its_time_limit_reports_what_it_finished(tmp_path):
    # Just over MIN_STEP_S: sysinfo starts, and once it ends (a process start alone is over 0.05 s) less than
    # MIN_STEP_S is left, so no other step starts, however fast this machine trains.
    result = device_check(
        *("--out", str(tmp_path), "--size", "smoke", "--time-limit-s", str(MIN_STEP_S + 0.05)),
        *("--frameworks", "jax", "--kinds", "sysinfo", "time_to_accuracy", "throughput"),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    doc = json.loads((tmp_path / JSON_NAME).read_text())
    statuses = {s["id"]: s["status"] for s in doc["steps"]}
    assert statuses["sysinfo"] == "passed" and not doc["passed"]
    unfinished = [s for s in doc["steps"] if s["id"] != "sysinfo"]
    assert unfinished and all(s["status"] == "not_run" for s in unfinished)
    assert all("time limit" in s["reason"] for s in unfinished)
    assert "NOT PASSED" in (tmp_path / MARKDOWN_NAME).read_text()


def test_an_earlier_report_is_kept_unless_forced(tmp_path):
    (tmp_path / JSON_NAME).write_text("{}")
    result = device_check("--out", str(tmp_path), "--size", "smoke", "--kinds", "sysinfo")
    assert result.returncode == 2 and "pass --force" in result.stderr and JSON_NAME in result.stderr
    assert "Traceback" not in result.stderr and (tmp_path / JSON_NAME).read_text() == "{}"


def test_a_bad_time_limit_is_one_line(tmp_path):
    result = device_check("--out", str(tmp_path), "--time-limit-s", "0")
    assert result.returncode == 2 and "--time-limit-s 0.0: expected a positive number" in result.stderr


def test_the_gpu_plan_covers_every_standard_task_in_every_framework():
    steps = P.build_plan("gpu", ["pytorch", "jax"])
    standard = {t.id for t in load_suite().tasks.values() if t.size_class == "standard"}
    assert len(standard) == 3
    for kind, per_task in (("throughput", 1), ("inference", len(P.SCENARIOS))):
        cases = [(s.task, s.framework) for s in steps if s.kind == kind]
        assert sorted(set(cases)) == sorted((t, fw) for t in standard for fw in ("pytorch", "jax")), kind
        assert len(cases) == len(standard) * 2 * per_task, kind
    for step in steps:
        if step.kind == "throughput":
            # one run per step: the rules' run count would time five (the first GPU run's failure)
            assert step.args[step.args.index("--runs") + 1] == "1"
            assert "--profile" in step.args and step.args[step.args.index("--profile") + 1] == "submission"
        if step.mode == "eager":
            assert step.mode_reason and (step.task, step.framework) in P.EAGER
    (equivalence,) = [s for s in steps if s.kind == "equivalence"]
    assert equivalence.env == {"LEVELFIELD_TEST_FRAMEWORKS": "pytorch,jax"}
    assert [s.kind for s in steps][:2] == ["sysinfo", "time_to_accuracy"]


def test_the_plan_times_each_precision_its_rules_allow():
    suite = load_suite()
    assert P.allowed_precisions(suite.task("fmnist-resnet")) == ["fp32", "bf16"]  # a tunable choice
    assert P.allowed_precisions(suite.task("ctr-dlrm-standard")) == ["fp32"]  # fixed in rules 1.1


def test_one_framework_runs_no_equivalence_and_kinds_select_steps():
    assert "equivalence" not in {s.kind for s in P.build_plan("gpu", ["jax"])}
    kinds = {s.kind for s in P.build_plan("smoke", FRAMEWORKS, kinds=("throughput", "equivalence"))}
    assert kinds == {"throughput", "equivalence"}


def test_the_report_keeps_versions_as_text():
    device = {"kind": "cuda", "name": "NVIDIA H200", "count": 1, "driver": "580.159.04"}
    device.update(cuda_runtime="13.0", cudnn="91900", nccl="2.28.9")
    step = {"id": "tta", "kind": "time_to_accuracy", "status": "passed", "seconds": 1.0, "mode": "compiled"}
    step["figures"] = {"device": device, "time_to_train_s": 0.78, "epochs": 1}
    doc = {"size": "gpu", "time_limit_s": 360.0, "elapsed_s": 20.0, "started_utc": "2026-11-27T22:31:00Z"}
    doc.update(frameworks=["pytorch"], absent=["tensorflow", "jax"], versions={"torch": "2.11.0"})
    doc.update(passed=True, counts={"passed": 1, "failed": 0, "timed_out": 0, "not_run": 0}, steps=[step])
    text = markdown(doc)
    assert "| 13.0 " in text and "| 2.28.9 " in text and "0.78 s to target (1 epochs)" in text
